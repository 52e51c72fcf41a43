package schemas_test

import (
	"fmt"

	"github.com/docket/docket/schemas"
)

// Every event type has a schema; a consumer in any language can decode the
// log from these files alone.
func ExampleParse() {
	all, err := schemas.Parse()
	if err != nil {
		fmt.Println(err)
		return
	}
	s := all["DocumentUploaded"]
	fmt.Println(s.Type(), len(all) > 10)
	// Output: record true
}
