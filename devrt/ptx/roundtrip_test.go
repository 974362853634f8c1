package ptx

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusFiles lists the real PTX files in testdata/corpus.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.ptx")
	if err != nil || len(files) != 7 {
		t.Fatalf("want the 7 corpus files, got %d (%v)", len(files), err)
	}
	return files
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCorpusRoundTrip: for every real PTX file, Write(Parse(x)) parses to an
// equal AST and has exactly the token stream of x.
func TestCorpusRoundTrip(t *testing.T) {
	for _, f := range corpusFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := RoundTrip(readFile(t, f), false); err != nil {
				t.Fatal(err)
			}
		})
	}
}
