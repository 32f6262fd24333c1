package dirstore

import (
	"encoding/hex"
	"hash/crc32"
)

// Every line of every file but FORMAT is framed (format §2):
//
//	<crc32c of payload, 8 lowercase hex> SP <payload> LF
//
// so a torn or hand-edited line is detected before its payload is parsed.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const crcLen = 8

func appendFrame(dst, payload []byte) []byte {
	var sum [4]byte
	c := crc32.Checksum(payload, castagnoli)
	sum[0], sum[1], sum[2], sum[3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, ' ')
	dst = append(dst, payload...)
	return append(dst, '\n')
}

// unframe checks a line (without its LF) and returns its payload, or a
// reason it is not a valid frame.
func unframe(line []byte) ([]byte, string) {
	if len(line) < crcLen+1 || line[crcLen] != ' ' {
		return nil, "not a framed line (want 8 hex digits of CRC-32C, a space, then JSON)"
	}
	for _, c := range line[:crcLen] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return nil, "checksum is not 8 lowercase hexadecimal digits"
		}
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[:crcLen]); err != nil {
		return nil, "checksum is not hexadecimal"
	}
	payload := line[crcLen+1:]
	want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	if crc32.Checksum(payload, castagnoli) != want {
		return nil, "checksum mismatch (the line was torn or edited)"
	}
	return payload, ""
}
