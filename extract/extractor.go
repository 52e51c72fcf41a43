package extract

import "context"

// Input is what an Extractor gets: the preprocessed document and the
// upload it came from, for extractors that read the file themselves (a
// vision model reads the scan, not our OCR of it).
type Input struct {
	Doc      *Document
	Data     []byte
	FileName string
}

// Extractor finds the line items of a preprocessed document. BuiltIn is
// the default; Remote hands documents to a team's own model service.
// Errors are *Error with one of the package's codes.
type Extractor interface {
	ExtractItems(ctx context.Context, in Input) (*Invoice, error)
}

// BuiltIn returns the heuristic table reader, Extract, as an Extractor.
func BuiltIn() Extractor { return builtIn{} }

type builtIn struct{}

func (builtIn) ExtractItems(ctx context.Context, in Input) (*Invoice, error) {
	return Extract(ctx, in.Doc)
}

// fileReader marks extractors that read the upload itself, so that a scan
// OCR could not read (no Tesseract here) can still go to them.
type fileReader interface{ readsFile() }

func (*Remote) readsFile() {}

// Proceeds reports whether ex can still run after Preprocess returned doc
// and err: always when err is nil, and for an extractor that reads the
// file itself also when only OCR was missing.
func Proceeds(ex Extractor, doc *Document, err error) bool {
	if err == nil {
		return doc != nil
	}
	_, reads := ex.(fileReader)
	return reads && doc != nil && Code(err) == CodeOCRUnavailable
}

// Process is Preprocess followed by ex (BuiltIn when nil), for callers that
// need no event between the two (the CLI; the worker records one).
func Process(ctx context.Context, data []byte, fileName string, ex Extractor, opts ...Option) (*Document, *Invoice, error) {
	if ex == nil {
		ex = BuiltIn()
	}
	doc, err := Preprocess(ctx, data, fileName, opts...)
	if !Proceeds(ex, doc, err) {
		return doc, nil, err
	}
	inv, err := ex.ExtractItems(ctx, Input{Doc: doc, Data: data, FileName: fileName})
	return doc, inv, err
}
