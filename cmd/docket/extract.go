package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/docket/docket/extract"
)

// bindExtractFlags registers the flags that shape processing one document;
// serve, extract and eval share them so that `docket extract` shows what
// the worker would do.
func (c *Config) bindExtractFlags(fs *flag.FlagSet) {
	d, _ := time.ParseDuration(env("document-timeout", "2m"))
	fs.DurationVar(&c.DocumentTimeout, "document-timeout", d, "time limit for one document")
	mp, _ := strconv.Atoi(env("max-pages", "500"))
	fs.IntVar(&c.MaxPages, "max-pages", mp, "page limit for one document")
	fs.StringVar(&c.Extractor, "extractor", env("extractor", ""), "URL of an external extraction service (default: built-in)")
	et, _ := time.ParseDuration(env("extractor-timeout", "30s"))
	fs.DurationVar(&c.ExtractorTimeout, "extractor-timeout", et, "time limit for one request to --extractor")
	fs.StringVar(&c.OCRLanguages, "ocr-languages", env("ocr-languages", extract.DefaultOCRLanguages), "Tesseract languages, +-separated (each needs its tesseract-ocr-LANG package)")
}

// validateExtraction checks the extraction flags; a zero ExtractorTimeout
// means the documented default.
func (c *Config) validateExtraction() error {
	if c.ExtractorTimeout == 0 {
		c.ExtractorTimeout = 30 * time.Second
	}
	if c.ExtractorTimeout < 0 {
		return errors.New("--extractor-timeout must be positive")
	}
	if c.Extractor != "" {
		if _, err := extract.NewRemote(c.Extractor); err != nil {
			return fmt.Errorf("--extractor: %w", err)
		}
	}
	return nil
}

// extractor is the configured Extractor: the remote service or built-in.
func (c *Config) extractor() (extract.Extractor, error) {
	if c.Extractor == "" {
		return extract.BuiltIn(), nil
	}
	return extract.NewRemote(c.Extractor, extract.RemoteTimeout(c.ExtractorTimeout))
}

func (c *Config) extractOptions() []extract.Option {
	return []extract.Option{extract.MaxPages(c.MaxPages), extract.OCRLanguages(c.OCRLanguages)}
}

// exitStatus ends the process with its value and prints nothing more: the
// command has already written its answer.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// extractOutput is what `docket extract` prints on success.
type extractOutput struct {
	ContentType string          `json:"content_type"`
	NumPages    int             `json:"num_pages"`
	Currency    *string         `json:"currency"`
	LineItems   []extractedItem `json:"line_items"`
}

type extractedItem struct {
	Description string  `json:"description"`
	Quantity    float64 `json:"quantity"`
	UnitPrice   float64 `json:"unit_price"`
	Amount      float64 `json:"amount"`
}

type errorOutput struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// runExtract is `docket extract FILE`: the document's items as JSON on
// stdout and exit 0, or {"error": {"code", "message"}} and exit 1.
func runExtract(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.bindExtractFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("docket extract [flags] FILE")
	}
	if err := cfg.validateExtraction(); err != nil {
		return err
	}
	ex, err := cfg.extractor()
	if err != nil {
		return err
	}
	out, err := extractFile(ctx, &cfg, ex, fs.Arg(0))
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err != nil {
		var e errorOutput
		e.Error.Code, e.Error.Message = extract.Code(err), err.Error()
		if werr := enc.Encode(e); werr != nil {
			return werr
		}
		return exitStatus(1)
	}
	return enc.Encode(out)
}

// extractFile reads and processes one file under the document time limit,
// as the worker does.
func extractFile(ctx context.Context, cfg *Config, ex extract.Extractor, path string) (*extractOutput, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &extract.Error{Code: extract.CodeInternal, Message: "extract: cannot read the file", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.DocumentTimeout)
	defer cancel()
	doc, inv, err := extract.Process(ctx, data, path, ex, cfg.extractOptions()...)
	if err != nil {
		return nil, err
	}
	out := &extractOutput{ContentType: doc.ContentType, NumPages: doc.Pages, LineItems: make([]extractedItem, 0, len(inv.Items))}
	if inv.Currency != "" {
		out.Currency = &inv.Currency
	}
	for _, it := range inv.Items {
		out.LineItems = append(out.LineItems, extractedItem{it.Description, it.Quantity, it.UnitPrice, it.Amount})
	}
	return out, nil
}
