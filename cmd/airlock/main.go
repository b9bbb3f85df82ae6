// Command airlock is the loopback broker for editor extensions, browser
// views and sandboxed tools. See the README for the subcommands.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
