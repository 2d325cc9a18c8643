package types

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The Avro binary encoding's primitives, read and written by the row
// codecs' plans (avro_decode.go, avro_encode.go). twmb/avro encodes and
// decodes Go values through reflection and exports no reader or writer of
// single primitives, so these are ours: zig-zag varints, little-endian
// floats, length-prefixed bytes and block headers, as the specification
// writes them, without allocating.

// errAvroShort is a payload that ends inside a value.
var errAvroShort = errors.New("the payload ends inside a value")

// avroReader reads primitives from one payload. The first error sticks
// (err) and every later read returns zero values, so a plan checks once
// after a value instead of after each primitive.
type avroReader struct {
	b   []byte
	i   int
	err error
}

func (r *avroReader) reset(b []byte) { r.b, r.i, r.err = b, 0, nil }

func (r *avroReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.i = len(r.b)
}

// readLong reads a zig-zag varint of at most 10 bytes.
func (r *avroReader) readLong() int64 {
	var u uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if r.i >= len(r.b) {
			r.fail(errAvroShort)
			return 0
		}
		c := r.b[r.i]
		r.i++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1)
		}
	}
	r.fail(errors.New("a varint longer than 10 bytes"))
	return 0
}

// readInt reads a zig-zag varint that must fit an int.
func (r *avroReader) readInt() int32 {
	v := r.readLong()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail(fmt.Errorf("%d does not fit an Avro int", v))
		return 0
	}
	return int32(v)
}

func (r *avroReader) readBool() bool {
	if r.i >= len(r.b) {
		r.fail(errAvroShort)
		return false
	}
	c := r.b[r.i]
	r.i++
	if c > 1 {
		r.fail(fmt.Errorf("invalid boolean byte 0x%02x", c))
		return false
	}
	return c == 1
}

func (r *avroReader) readFloat() float32 {
	if len(r.b)-r.i < 4 {
		r.fail(errAvroShort)
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b[r.i:]))
	r.i += 4
	return v
}

func (r *avroReader) readDouble() float64 {
	if len(r.b)-r.i < 8 {
		r.fail(errAvroShort)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.i:]))
	r.i += 8
	return v
}

// read copies the next len(p) bytes into p.
func (r *avroReader) read(p []byte) {
	if len(r.b)-r.i < len(p) {
		r.fail(errAvroShort)
		return
	}
	r.i += copy(p, r.b[r.i:])
}

// readBlockHeader reads an array or map block's item count and, when the
// count is written negative, the block's size in bytes (else 0).
func (r *avroReader) readBlockHeader() (count, size int64) {
	count = r.readLong()
	if count < 0 {
		if count == math.MinInt64 {
			r.fail(errors.New("invalid block count"))
			return 0, 0
		}
		count, size = -count, r.readLong()
	}
	return count, size
}

// skip steps over n bytes.
func (r *avroReader) skip(n int64) {
	if n < 0 || n > int64(len(r.b)-r.i) {
		r.fail(errAvroShort)
		return
	}
	r.i += int(n)
}

func (r *avroReader) skipBytes() { r.skip(r.readLong()) }

// avroWriter appends primitives to buf.
type avroWriter struct {
	buf []byte
}

func (w *avroWriter) writeLong(v int64) {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		w.buf = append(w.buf, byte(u)|0x80)
		u >>= 7
	}
	w.buf = append(w.buf, byte(u))
}

func (w *avroWriter) writeBool(v bool) {
	var b byte
	if v {
		b = 1
	}
	w.buf = append(w.buf, b)
}

func (w *avroWriter) writeFloat(v float32) {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, math.Float32bits(v))
}

func (w *avroWriter) writeDouble(v float64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(v))
}

// writeBytes writes a length-prefixed string or bytes value.
func (w *avroWriter) writeBytes(b []byte) {
	w.writeLong(int64(len(b)))
	w.buf = append(w.buf, b...)
}
