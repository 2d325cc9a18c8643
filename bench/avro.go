package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	"github.com/sqlstreams/sqlstreams/types"
)

// The stateless-avro scenario: the stateless query over the same bids as
// Avro values in the Confluent wire format, through the embedded schema
// registry, in and out. The hand-written pipeline uses the same Avro
// library (twmb/avro) the way its documentation shows: Schema.Decode into
// a struct, Schema.AppendEncode of an output struct into the transaction's
// arena.

// bidAvroSchema is the writer schema of the preloaded bids.
const bidAvroSchema = `{"type":"record","name":"Bid","namespace":"nexmark","fields":[
{"name":"auction","type":"long"},{"name":"bidder","type":"long"},{"name":"price","type":"long"},
{"name":"channel","type":"string"},{"name":"url","type":"string"},{"name":"dateTime","type":"long"},
{"name":"extra","type":"string"}]}`

type avroBid struct {
	Auction  int64  `avro:"auction" json:"auction"`
	Bidder   int64  `avro:"bidder" json:"bidder"`
	Price    int64  `avro:"price" json:"price"`
	Channel  string `avro:"channel" json:"channel"`
	URL      string `avro:"url" json:"url"`
	DateTime int64  `avro:"dateTime" json:"dateTime"`
	Extra    string `avro:"extra" json:"extra"`
}

// avroOut is the output row; its schema is the one sqlstreams registers
// for the query's sink, so both systems write the same bytes.
type avroOut struct {
	Bidder  *int64  `avro:"BIDDER"`
	Euros   *int64  `avro:"EUROS"`
	Channel *string `avro:"CHANNEL"`
}

func outAvroSchema() string {
	return types.AvroSchema([]string{"BIDDER", "EUROS", "CHANNEL"},
		[]types.Type{types.BigintType, types.BigintType, types.StringType}, true,
		"io.confluent.ksql.avro_schemas.KsqlDataSourceSchema")
}

// startRegistry serves an embedded registry on brokers over loopback HTTP,
// as the server does, and returns a client of it.
func startRegistry(ctx context.Context, brokers []string) (*registry.Client, func(), error) {
	reg, err := registry.Open(ctx, registry.Config{Kafka: kafka.Plain(brokers...), Logger: slog.Default()})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		reg.Close()
		return nil, nil, err
	}
	hs := &http.Server{Handler: reg.Handler()}
	go hs.Serve(ln)
	cl, err := registry.NewClient(registry.ClientConfig{URL: "http://" + ln.Addr().String()})
	if err != nil {
		hs.Close()
		reg.Close()
		return nil, nil, err
	}
	return cl, func() { hs.Close(); reg.Close() }, nil
}

// avroEncoder turns the generator's JSON bids into Avro records with the
// Confluent header, the schema registered under <topic>-value.
func avroEncoder(schemas *registry.Client, topic string) (func([]byte) ([]byte, error), error) {
	id, err := schemas.Register(topic+"-value", types.RegisteredSchema{Type: types.SchemaTypeAvro, Text: bidAvroSchema})
	if err != nil {
		return nil, err
	}
	sch, err := avro.Parse(bidAvroSchema)
	if err != nil {
		return nil, err
	}
	var h sr.ConfluentHeader
	return func(js []byte) ([]byte, error) {
		var b avroBid
		if err := json.Unmarshal(js, &b); err != nil {
			return nil, err
		}
		out, _ := h.AppendEncode(nil, id, nil)
		return sch.AppendEncode(out, &b)
	}, nil
}

// statelessAvro: the stateless query over Avro bids.
type statelessAvro struct {
	in, out *avro.Schema
	outID   int
	median  int64
	topic   string
	bad     int64
	hdr     sr.ConfluentHeader
	bid     avroBid
	row     avroOut
	bidder  int64
	euros   int64
	channel string
}

func newStatelessAvro(schemas *registry.Client, median int64, out string) (*statelessAvro, error) {
	outText := outAvroSchema()
	id, err := schemas.Register(out+"-value", types.RegisteredSchema{Type: types.SchemaTypeAvro, Text: outText})
	if err != nil {
		return nil, err
	}
	s := &statelessAvro{in: avro.MustParse(bidAvroSchema), out: avro.MustParse(outText), outID: id,
		median: median, topic: out}
	s.row = avroOut{Bidder: &s.bidder, Euros: &s.euros, Channel: &s.channel}
	return s, nil
}

func (s *statelessAvro) process(r *kgo.Record, b *batch) error {
	// The writer schema is known (one ID); a general pipeline would look
	// the ID up, as sqlstreams does.
	if _, payload, err := s.hdr.DecodeID(r.Value); err != nil {
		s.bad++
		return nil
	} else if _, err := s.in.Decode(payload, &s.bid); err != nil {
		s.bad++
		return nil
	}
	if s.bid.Price <= s.median {
		return nil
	}
	s.bidder, s.euros, s.channel = s.bid.Bidder, s.bid.Price*908/1000, s.bid.Channel
	start := len(b.arena)
	a, _ := s.hdr.AppendEncode(b.arena, s.outID, nil)
	a, err := s.out.AppendEncode(a, &s.row)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	b.arena = a
	b.add(s.topic, r, a[start:len(a):len(a)])
	return nil
}

func (s *statelessAvro) commit() {}
func (s *statelessAvro) abort()  {}
