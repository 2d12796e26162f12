package api

import "testing"

func TestResourceFileName(t *testing.T) {
	for uri, want := range map[string]string{
		"demo://resource/static/document/architecture.md": "architecture.md",
		"demo://docs/a%20b.md":                            "a b.md",
		"demo://x/7?v=1/2#frag":                           "7",
		"file:///dir/":                                    "dir",
		"urn:isbn:0451450523":                             "urn:isbn:0451450523",
	} {
		if got := resourceFileName(uri); got != want {
			t.Errorf("resourceFileName(%q) = %q, want %q", uri, got, want)
		}
	}
}
