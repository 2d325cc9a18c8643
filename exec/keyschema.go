package exec

import (
	"errors"

	"github.com/sqlstreams/sqlstreams/types"
)

// latestKeyEncoder returns an encoder of key columns cols of schema in
// format with options o, for keys that must equal a source's record keys
// (the same bytes find its rows and go to its partitions). In a
// schema-registry format, when o names no schema (the source declares its
// columns, without KEY_SCHEMA_ID), the keys are written as the source's
// producers most likely write them: with the latest schema of its subject
// (ofSubject) when the columns can be written with it, else with the
// schema made from the columns. A registry that cannot be asked now
// leaves the latter.
func latestKeyEncoder(format string, schema types.Schema, cols []int, o types.FormatOptions, ofSubject string) (types.Encoder, error) {
	enc, err := types.NewEncoderOpts(format, schema, cols, o)
	if err != nil {
		return nil, err
	}
	if !types.InfersColumns(format) || o.Schemas == nil || o.SchemaID != 0 || o.ReaderSchemaID != 0 || ofSubject == "" {
		return enc, nil
	}
	id, _, err := o.Schemas.Latest(ofSubject)
	if err != nil {
		return enc, nil
	}
	o.SchemaID = id
	latest, err := types.NewEncoderOpts(format, schema, cols, o)
	if err != nil {
		return enc, nil
	}
	return &fittingEncoder{try: latest, fallback: enc}, nil
}

// fittingEncoder writes with try until it fails for other than the
// registry's sake (its schema does not fit the columns), then with
// fallback for good.
type fittingEncoder struct {
	try, fallback types.Encoder
	failed        bool
}

func (e *fittingEncoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	if !e.failed {
		n := len(dst)
		out, err := e.try.Encode(dst, row)
		if err == nil || errors.Is(err, types.ErrRegistry) {
			return out, err
		}
		e.failed, dst = true, dst[:n]
	}
	return e.fallback.Encode(dst, row)
}
