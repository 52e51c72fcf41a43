// Package extract turns uploaded documents into invoice line items.
//
// It is split in two steps because they fail for different reasons and are
// retried differently: Preprocess deals with the file (is it a PDF, is it
// broken, does it have text at all) and Extract with the content (where is
// the item table). Callers persist the Document between the two, so a
// better extractor can be rerun over stored text without the original
// upload.
//
// Extraction is heuristic on purpose. Invoices have no schema; what they
// share is a header row naming the columns, item rows whose numbers agree
// (quantity × unit price = amount), and summary rows underneath. Every
// source is laid out as fixed-width text first (PDF text runs, poppler's
// word boxes and Tesseract's OCR words alike), so that one reader serves
// text, PDF, scans and (via tab-separated cells) HTML, and CSV gets the same
// reader on properly parsed fields.
//
// External programs are optional: Tesseract reads scans and poppler is the
// second PDF engine and the rasteriser. Without them text PDFs still work
// (pure-Go reader) and scans fail with ocr_unavailable, never silently
// empty. They run under the caller's context, so the document deadline
// kills them, in a private temporary directory.
//
// Every failure is an *Error whose Code says what the caller can do about
// it: fix the upload (unsupported_format, corrupt_document,
// empty_document, too_many_pages), install OCR (ocr_unavailable), retry
// (timeout) or report a bug (internal_error). The package imports nothing
// from the rest of docket so that it can be tested, fuzzed and reused on
// its own. An Extractor other than the built-in one (Remote: a team's own
// model service over HTTP) can take over the second step.
package extract
