package blobstore_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/docket/docket/blobstore"
)

func Example() {
	dir, err := os.MkdirTemp("", "blobstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := blobstore.NewFS(dir, blobstore.MaxSize(1<<20))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	blob, err := store.Put(ctx, strings.NewReader("hello, docket\n"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(blob.Key, blob.Size)

	rc, err := store.Open(ctx, blob.Key)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", body)

	_, err = store.Open(ctx, "../etc/passwd")
	fmt.Println(blobstore.IsClientError(err))
	// Output:
	// 33ae90ed4f31ddce248d99d12c1ab166e1a1e560e5f9640c61d3d6beef7d59a2 14
	// "hello, docket\n"
	// true
}
