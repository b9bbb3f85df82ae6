// Command rebuild rebuilds each bundled plugin's module from its source
// and updates the sha256 in its plugin.json. Run it from plugins/bundled
// (go generate does):
//
//	go generate ./plugins/bundled
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/airlock/airlock/plugins/bundled/internal/modbuild"
)

func main() {
	for _, name := range modbuild.Plugins {
		out := filepath.Join(name, name+".wasm")
		if err := modbuild.Build(name, out); err != nil {
			log.Fatal(err)
		}
		module, err := os.ReadFile(out)
		if err != nil {
			log.Fatal(err)
		}
		sum := modbuild.SHA256(module)
		if err := modbuild.SetSHA256(filepath.Join(name, "plugin.json"), sum); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s (%d bytes)\n", out, sum, len(module))
	}
}
