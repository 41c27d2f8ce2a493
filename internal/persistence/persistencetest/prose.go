package persistencetest

import (
	"math/rand/v2"
	"strings"
)

// proseWords is the vocabulary of Prose: a few hundred words of the kind a
// coding assistant's replies are made of.
var proseWords = strings.Fields(`
the a an of to in for on with by from at as is are was be been it this that
these those which what when where why how not no but or and if then else so
because while after before until about into over under between through each
every some any all most more less many few other same new old first last next
one two three four five ten hundred thousand file files function functions
method type types value values field struct interface package module import
error errors test tests case cases check checks return returns call calls read
reads write writes open close start stop run runs build builds change changes
line lines code source branch commit merge review patch diff fix fixes bug bugs
issue issues request response server client session sessions message messages
stream streams token tokens model models reply replies prompt prompts context
window buffer buffers cache caches store stores table tables row rows column
index query queries database transaction lock locks thread threads process
memory disk time times second seconds minute byte bytes size length count
limit limits path paths directory name names key keys map list slice array
string strings number numbers option options flag flags config setting
settings default defaults user users editor tool tools command commands output
input log logs event events frame frames load loads save saves keep keeps make
makes use uses need needs want wants see sees find finds look looks add adds
remove removes move moves copy copies update updates handle handles parse
parses encode encodes decode decodes compress measure measures
test-suite benchmark profile allocation allocations loop loops pointer
pointers channel channels goroutine goroutines mutex network socket pipe
here there now still already just only also even again instead rather quite
very much well fast slow small large big long short early late easy hard
simple clear exact right wrong safe careful correct better worse best worst
likely probably usually often never always sometimes maybe perhaps certainly
we you they I he she our your their its my think know guess suppose expect
show shows explain explains describe describes mean means seem seems turn
turns happen happens work works fail fails pass passes try tries get gets
give gives take takes put puts set sets let lets say says tell tells ask asks
answer answers plan plans step steps part parts whole rest end ends half
`)

// Prose returns about n bytes of varied English-like text, the same for
// the same seed: sentences of words drawn at random from 401,
// with punctuation and now and then a line break. Benchmarks that measure
// bytes stored need it: a repeated line compresses to almost nothing and
// proves little about what a real conversation costs.
func Prose(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		words := 6 + r.IntN(15)
		for i := 0; i < words; i++ {
			w := proseWords[r.IntN(len(proseWords))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			if i < words-1 && r.IntN(9) == 0 {
				b.WriteByte(',')
			}
		}
		switch r.IntN(12) {
		case 0:
			b.WriteString("?")
		case 1:
			b.WriteString(".\n\n")
			continue
		default:
			b.WriteString(".")
		}
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}
