package console_test

import (
	"fmt"

	"github.com/docket/docket/console"
)

// The API serves the page at /console and its files at /console/{asset}.
func ExampleLookup() {
	page, _ := console.Lookup("")
	script, _ := console.Lookup("app.js")
	_, found := console.Lookup("../doc.go")
	fmt.Println(page.ContentType)
	fmt.Println(script.ContentType)
	fmt.Println(found)
	// Output:
	// text/html; charset=utf-8
	// text/javascript; charset=utf-8
	// false
}
