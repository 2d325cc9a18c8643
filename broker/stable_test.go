package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStableOffsetsPerPartition: an open transaction that commits the
// offset of partition 0 for a group holds back a stable offset fetch of
// partition 0 (UNSTABLE_OFFSET_COMMIT) until it ends, and not one of
// partition 1, as Kafka answers; kfake alone answered
// UNSTABLE_OFFSET_COMMIT for every partition of the group.
func TestStableOffsetsPerPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := startBroker(t, Config{Addr: "127.0.0.1:0"})
	defer b.Close()
	createTopic(t, b.Addr(), "in", 2)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	id := topics["in"].ID
	var committed kadm.Offsets
	committed.AddOffset("in", 0, 5, -1)
	committed.AddOffset("in", 1, 5, -1)
	if err := adm.CommitAllOffsets(ctx, "g", committed); err != nil {
		t.Fatal(err)
	}

	txnID := "x"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60_000
	initResp, err := init.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(initResp.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, initResp.ProducerID, initResp.ProducerEpoch, "g"
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = txnID, "g", initResp.ProducerID, initResp.ProducerEpoch, -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic, tt.TopicID = "in", id
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset, tp.LeaderEpoch = 0, 10, -1
	tt.Partitions = append(tt.Partitions, tp)
	toc.Topics = append(toc.Topics, tt)
	if resp, err := toc.RequestWith(ctx, cl); err != nil || kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode) != nil {
		t.Fatalf("TxnOffsetCommit: %v %+v", err, resp)
	}

	// fetch asks for partition p's stable offset.
	fetch := func(p int32) (int64, error) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		req.Group = "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "in", []int32{p}
		req.Topics = append(req.Topics, rt)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.TopicID, gt.Partitions = "in", id, []int32{p}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		if len(resp.Groups) > 0 {
			rp := resp.Groups[0].Topics[0].Partitions[0]
			return rp.Offset, kerr.ErrorForCode(rp.ErrorCode)
		}
		rp := resp.Topics[0].Partitions[0]
		return rp.Offset, kerr.ErrorForCode(rp.ErrorCode)
	}
	if o, err := fetch(1); err != nil || o != 5 {
		t.Errorf("partition 1, which the open transaction does not commit: offset %d, %v; want 5", o, err)
	}
	if _, err := fetch(0); err != kerr.UnstableOffsetCommit {
		t.Errorf("partition 0, which the open transaction commits: %v, want UNSTABLE_OFFSET_COMMIT", err)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, initResp.ProducerID, initResp.ProducerEpoch, true
	if resp, err := end.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	if o, err := fetch(0); err != nil || o != 10 {
		t.Errorf("partition 0 after the commit: offset %d, %v; want 10", o, err)
	}
}
