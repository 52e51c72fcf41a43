package schemas_test

import (
	"encoding/json"
	"fmt"

	"github.com/docket/docket/schemas"
)

// A schema registry (or an Avro library that takes one schema text) needs an
// event schema with the shared records written out in full.
func ExampleStandalone() {
	text, err := schemas.Standalone("ApiKeyRevoked")
	if err != nil {
		panic(err)
	}
	var s struct {
		Name   string `json:"name"`
		Fields []struct {
			Name string `json:"name"`
			Type any    `json:"type"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		panic(err)
	}
	meta := s.Fields[0].Type.(map[string]any)
	fmt.Println(s.Name, s.Fields[0].Name, meta["name"], meta["type"], s.Fields[1].Name)
	// Output: ApiKeyRevoked meta Meta record key_id
}
