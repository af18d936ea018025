package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Vectors computed by running Claude Code 2.1.332's own functions (copied
// from its bundled code) under node; the long one was also confirmed by the
// real CLI creating that project directory.
func TestProjectSlug(t *testing.T) {
	cases := []struct{ dir, want string }{
		{"/home/user/project", "-home-user-project"},
		{"/tmp/work dir/with.dots_and-dashes", "-tmp-work-dir-with-dots-and-dashes"},
		{"/srv/café/naïve", "-srv-caf--na-ve"},
		{"/srv/emoji/😀/x", "-srv-emoji----x"},
		{"/" + strings.Repeat("a", 199), "-" + strings.Repeat("a", 199)},
		{"/" + strings.Repeat("a", 200), "-" + strings.Repeat("a", 199) + "-b6ymvl"},
		{"/" + strings.Repeat("a", 250), "-" + strings.Repeat("a", 199) + "-feo44x"},
		{"/work/" + strings.Repeat("deep/", 60) + "end", "-work-" + strings.Repeat("deep-", 38) + "deep-xc2q18"},
		{"/x/" + strings.Repeat("é", 300), "-x-" + strings.Repeat("-", 197) + "-el88be"},
		{"/x/" + strings.Repeat("😀", 150), "-x-" + strings.Repeat("-", 197) + "-193zs8"},
		// Made by the real CLI (claude -p in that directory).
		{"/tmp/slugwd/" + strings.Repeat("d", 120) + "/" + strings.Repeat("e", 100) + "/café",
			"-tmp-slugwd-" + strings.Repeat("d", 120) + "-" + strings.Repeat("e", 67) + "-9wz31t"},
	}
	for _, c := range cases {
		got := projectSlug(c.dir)
		assert.Equal(t, c.want, got, "dir %q", c.dir)
		assert.LessOrEqual(t, len(got), 255, "a slug must fit a file name")
	}
}

func TestWorkdirResolvesLinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(real, link))
	realBase, err := filepath.EvalSymlinks(base)
	require.NoError(t, err)

	got, err := workdirOf(link)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(realBase, "real"), got)

	// A directory that does not exist yet keeps its missing tail.
	got, err = workdirOf(filepath.Join(link, "not", "yet"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(realBase, "real", "not", "yet"), got)

	_, err = workdirOf("")
	assert.Error(t, err)
}
