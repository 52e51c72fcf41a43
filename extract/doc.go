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
// (quantity × unit price = amount), and summary rows underneath. PDFs are
// laid out as fixed-width text first so that one reader serves text, PDF
// and (via tab-separated cells) HTML alike, and CSV gets the same reader
// on properly parsed fields.
//
// Every failure is an *Error whose Code says what the caller can do about
// it: fix the upload (unsupported_format, corrupt_document,
// empty_document, too_many_pages), wait for a feature (ocr_unavailable),
// retry (timeout) or report a bug (internal_error). The package imports
// nothing from the rest of docket so that it can be tested, fuzzed and
// reused on its own.
package extract
