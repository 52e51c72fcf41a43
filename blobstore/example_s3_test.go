package blobstore_test

import (
	"fmt"

	"github.com/docket/docket/blobstore"
)

func ExampleParseURL() {
	bucket, prefix, err := blobstore.ParseURL("s3://docket-prod/blobs/")
	fmt.Printf("%q %q %v\n", bucket, prefix, err)

	bucket, prefix, err = blobstore.ParseURL("s3://docket-prod")
	fmt.Printf("%q %q %v\n", bucket, prefix, err)

	_, _, err = blobstore.ParseURL("https://docket-prod/blobs")
	fmt.Println(err != nil)
	// Output:
	// "docket-prod" "blobs" <nil>
	// "docket-prod" "" <nil>
	// true
}
