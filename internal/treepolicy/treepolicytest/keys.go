// Package treepolicytest holds fake secrets of the real shapes for the
// tests of the secret scanner (internal/treepolicy) and of its users (the
// packer, workspace snapshots). The keys are built at run time, so no file
// of the repository holds a string a secret scanner would flag.
package treepolicytest

import (
	"math/rand/v2"
	"strings"
)

// FakeKey returns prefix followed by n characters of alphabet, the same
// for the same prefix length and n.
func FakeKey(prefix string, n int, alphabet string) string {
	rng := rand.New(rand.NewPCG(uint64(len(prefix)), uint64(n)))
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// Alphabets of the keys below.
const (
	Alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	URLSafe = Alnum + "-_"
	UpperDg = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	Base64  = Alnum + "+/"
)

// One fake key of each shape the scanner knows.
var (
	AnthropicKey = FakeKey("sk-"+"ant-api03-", 93, URLSafe) + "AA"
	AnthropicOAT = FakeKey("sk-"+"ant-oat01-", 93, URLSafe) + "AA"
	OpenAIProj   = FakeKey("sk-"+"proj-", 120, URLSafe)
	OpenAIKey    = FakeKey("sk-", 48, Alnum)
	OpenAISvc    = FakeKey("sk-"+"svcacct-", 60, URLSafe)
	AWSID        = FakeKey("AK"+"IA", 16, UpperDg)
	AWSSTSID     = FakeKey("AS"+"IA", 16, UpperDg)
	AWSSecret    = FakeKey("", 40, Base64)
	GHPToken     = FakeKey("gh"+"p_", 36, Alnum)
	GHOToken     = FakeKey("gh"+"o_", 36, Alnum)
	GHSToken     = FakeKey("gh"+"s_", 36, Alnum)
	GHPAT        = FakeKey("github"+"_pat_", 82, Alnum+"_")
	SlackToken   = FakeKey("xo"+"xb-", 50, Alnum+"-")
	GoogleKey    = FakeKey("AI"+"za", 35, URLSafe)
	StripeKey    = FakeKey("sk"+"_live_", 30, Alnum)
)
