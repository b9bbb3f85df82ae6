package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/airlock/airlock/plugins/devkit"
)

// runNew is `airlock new NAME [--dir DIR]`: a plugin project that builds
// outside this repository (plugins/devkit.New).
func runNew(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("new", stderr)
	dir := fs.String("dir", "", "write the project into `DIR` (default ./NAME); it must be empty or absent")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock new NAME [--dir DIR]")
		fmt.Fprintln(stderr, "writes a plugin project (a greeting tool, its plugin.json and the guest SDK); see plugins/README.md")
		fs.PrintDefaults()
	}
	pos, code := parsePositional(fs, args, "new", stderr, "NAME")
	if code >= 0 {
		return code
	}
	name := pos[0]
	target := *dir
	if target == "" {
		target = name
	}
	files, err := devkit.New(name, target)
	if err != nil {
		return devkitExit(stderr, "new", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", target, strings.Join(files, " "))
	fmt.Fprintf(stdout, "next: airlock build %s && airlock run %s %s --args '{\"name\":\"Ada\"}'\n", target, target, devkit.ToolName(name))
	return exitOK
}
