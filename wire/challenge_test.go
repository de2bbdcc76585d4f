package wire

import "testing"

var challengeCodec = codec[Challenge]{
	app: AppendChallenge, parse: ParseChallenge,
	size: func(Challenge) int { return ChallengeLen },
}

func challengeSamples() []Challenge {
	s := []Challenge{
		{},
		{Nonce: 0x0807060504030201, Cookie: Cookie{Bucket: 0x0D0C0B0A, Tag: [16]byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF}}},
	}
	r := testRand(34)
	for i := 0; i < 4; i++ {
		s = append(s, Challenge{Nonce: r.Uint64(), Cookie: randCookie(r)})
	}
	return s
}

func TestChallenge(t *testing.T) {
	for _, c := range challengeSamples() {
		challengeCodec.roundTrip(t, c)
	}
	r := testRand(35)
	for i := 0; i < 2000; i++ {
		challengeCodec.roundTrip(t, Challenge{Nonce: r.Uint64(), Cookie: randCookie(r)})
	}
	want := "02 01 02 03 04 05 06 07 08 0a 0b 0c 0d a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af"
	if got := hexs(AppendChallenge(nil, challengeSamples()[1])); got != want {
		t.Fatalf("encoding %s", got)
	}
	mustErr(t, "ParseChallenge", ParseChallenge, append([]byte{byte(KindAccept)}, make([]byte, 40)...), ErrMalformed)
}

func seedsChallenge() [][]byte { return encodeAll(challengeCodec, challengeSamples()) }

func FuzzParseChallenge(f *testing.F) {
	for _, s := range seedsChallenge() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { challengeCodec.fuzzCheck(t, b) })
}
