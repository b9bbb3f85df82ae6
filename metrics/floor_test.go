package metrics

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoBroker: metrics is a floor below the broker, so neither it
// nor its tests import a broker package; the broker's vocabularies reach
// it as values (DeclareLocal).
func TestImportsNoBroker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/airlock/airlock/broker") {
			t.Errorf("metrics imports %s", dep)
		}
	}
}
