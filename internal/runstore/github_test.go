package runstore

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// ValidRepo accepts what GitHub's owner/name rule (the regular expression
// it replaced, kept here as the oracle) accepts, and nothing else.
func TestValidRepoKeepsGitHubsRule(t *testing.T) {
	oracle := regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)
	cases := []string{"a/b", "octo-org/tether.run", "-a/b", "a-/b", "a/b/c", "a/", "/b", "a/b.", "a/b..c", "a.b/c", "a_b/c", "a/b_c-d.e",
		strings.Repeat("o", 39) + "/n", strings.Repeat("o", 40) + "/n", "o/" + strings.Repeat("n", 100), "o/" + strings.Repeat("n", 101), "", "ab", "a//b", "ä/b"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ9-._/ä"
	for range 20000 {
		b := make([]rune, rng.IntN(12))
		for i := range b {
			b[i] = []rune(alphabet)[rng.IntN(len([]rune(alphabet)))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want := oracle.MatchString(s) && s[len(s)-1] != '.' && !strings.Contains(s, "..")
		assert.Equal(t, want, ValidRepo(s), "%q", s)
	}
}
