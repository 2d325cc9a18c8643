package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Missing is a permission the cluster does not grant the profile's
// principal, or one that could not be checked.
type Missing struct {
	Permission
	// Unchecked, when set, says why the permission could not be checked
	// (the broker does not report it): it may be granted.
	Unchecked string
}

// probeName is the name Check asks about for a prefix: a name under it
// that nothing creates (the probes create nothing).
const probeName = "sqlstreams-acl-probe"

// noOps is the authorized operations field of a response that does not
// report them (Kafka's default, Int32.MinValue).
const noOps = math.MinInt32

// Check asks the cluster, as the profile's principal, whether it grants
// each permission in need, and returns every one it does not, in need's
// order; err is set only when the cluster cannot be asked (a refused
// login, an untrusted certificate, unreachable brokers), explained.
//
// Nothing is created or changed; each resource type costs one or two
// requests:
//   - topics: Metadata with the authorized operations of each topic
//     (KIP-430, Kafka 2.3+; a prefix is asked about by a name under it
//     that does not exist), and CREATE by CreateTopics with
//     validate_only;
//   - groups: DescribeGroups (v5) with their authorized operations;
//   - transactional ids: EndTxn for a producer that does not exist,
//     which the broker authorizes (WRITE) before it finds nothing to end.
//
// Cluster permissions are not checked (none is needed on Kafka 2.8+).
func (p Profile) Check(ctx context.Context, need []Permission) ([]Missing, error) {
	// DescribeGroups v6 answers GROUP_ID_NOT_FOUND for a group that does
	// not exist, without its authorized operations; v5 answers them.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.DescribeGroups), 5)
	cl, err := p.NewClient(kgo.MaxVersions(versions))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	name := func(n Permission) string {
		if n.Prefixed {
			return n.Name + probeName
		}
		return n.Name
	}
	byType := map[ResourceType][]string{}
	seen := map[ResourceType]map[string]bool{}
	for _, n := range need {
		if seen[n.Type] == nil {
			seen[n.Type] = map[string]bool{}
		}
		if nm := name(n); !seen[n.Type][nm] {
			seen[n.Type][nm] = true
			byType[n.Type] = append(byType[n.Type], nm)
		}
	}
	topics, err := p.topicAccess(ctx, cl, byType[Topic])
	if err != nil {
		return nil, err
	}
	var toCreate []string
	for _, n := range need {
		if n.Type == Topic && n.Operation == Create {
			if a := topics[name(n)]; !(n.WhenAbsent && a.exists) {
				toCreate = append(toCreate, name(n))
			}
		}
	}
	creatable, err := p.createAccess(ctx, cl, toCreate)
	if err != nil {
		return nil, err
	}
	groups, err := p.groupAccess(ctx, cl, byType[Group])
	if err != nil {
		return nil, err
	}
	txns, err := p.txnAccess(ctx, cl, byType[TransactionalID])
	if err != nil {
		return nil, err
	}
	var out []Missing
	for _, n := range need {
		nm := name(n)
		var a access
		switch n.Type {
		case Topic:
			a = topics[nm]
			if n.Operation == Create {
				if n.WhenAbsent && a.exists {
					continue
				}
				a = creatable[nm]
			}
		case Group:
			a = groups[nm]
		case TransactionalID:
			a = txns[nm]
		default:
			continue
		}
		if ok, why := a.allows(n.Operation); !ok {
			out = append(out, Missing{Permission: n, Unchecked: why})
		}
	}
	return out, nil
}

// access is what a probe learnt about one resource.
type access struct {
	exists bool
	// ops are the operations the broker says the principal may do;
	// known says whether it said.
	ops   map[Operation]bool
	known bool
	// denied: the broker refused to describe the resource, so nothing
	// that implies DESCRIBE is granted.
	denied bool
	// unchecked says why nothing is known.
	unchecked string
}

func (a access) allows(op Operation) (bool, string) {
	switch {
	case a.known:
		return a.ops[op], ""
	case a.denied:
		return false, ""
	case a.unchecked != "":
		return false, a.unchecked
	}
	return false, "the broker did not answer about it"
}

// opsOf decodes an authorized operations bit field.
func opsOf(bits int32) (map[Operation]bool, bool) {
	if bits == noOps {
		return nil, false
	}
	out := map[Operation]bool{}
	for _, op := range []Operation{Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, IdempotentWrite} {
		if bits&(1<<uint(op.kmsg())) != 0 {
			out[op] = true
		}
	}
	return out, true
}

// topicAccess asks Metadata about topics, with their authorized
// operations.
func (p Profile) topicAccess(ctx context.Context, cl *kgo.Client, topics []string) (map[string]access, error) {
	out := map[string]access{}
	if len(topics) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	req.AllowAutoTopicCreation = false
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, p.Explain(err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		a := access{}
		code := kerr.ErrorForCode(rt.ErrorCode)
		a.exists = code == nil
		a.denied = errors.Is(code, kerr.TopicAuthorizationFailed)
		if resp.GetVersion() >= 8 {
			a.ops, a.known = opsOf(rt.AuthorizedOperations)
		}
		if a.denied {
			// Kafka reports no operations for a topic it refuses to
			// describe; kfake reports them (CREATE may be among them).
			a.known = a.known && rt.AuthorizedOperations != 0
		}
		if !a.known && !a.denied {
			a.unchecked = "the broker does not report topics' authorized operations (Metadata v8, Kafka 2.3+)"
		}
		out[*rt.Topic] = a
	}
	return out, nil
}

// createAccess asks whether topics may be created, by CreateTopics with
// validate_only (the broker authorizes before it looks for the topic).
func (p Profile) createAccess(ctx context.Context, cl *kgo.Client, topics []string) (map[string]access, error) {
	out := map[string]access{}
	if len(topics) == 0 {
		return out, nil
	}
	resps, err := kadm.NewClient(cl).ValidateCreateTopics(ctx, 1, -1, nil, topics...)
	if err != nil && !Denied(err) {
		return nil, p.Explain(err)
	}
	for _, t := range topics {
		r, ok := resps[t]
		switch {
		case !ok && err != nil:
			out[t] = access{denied: true}
		case !ok:
			out[t] = access{unchecked: "the broker did not answer CreateTopics (validate only) about it"}
		case errors.Is(r.Err, kerr.TopicAuthorizationFailed), errors.Is(r.Err, kerr.ClusterAuthorizationFailed):
			out[t] = access{denied: true}
		default:
			// Created (in validation), exists, or refused for another
			// reason (a policy, the replication factor): authorized.
			out[t] = access{known: true, ops: map[Operation]bool{Create: true}}
		}
	}
	return out, nil
}

// groupAccess asks DescribeGroups about groups, with their authorized
// operations.
func (p Profile) groupAccess(ctx context.Context, cl *kgo.Client, groups []string) (map[string]access, error) {
	out := map[string]access{}
	if len(groups) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	req.IncludeAuthorizedOperations = true
	for _, shard := range cl.RequestSharded(ctx, req) {
		sreq, _ := shard.Req.(*kmsg.DescribeGroupsRequest)
		if shard.Err != nil {
			if deniedType(shard.Err) != Group {
				return nil, p.Explain(shard.Err)
			}
			// FindCoordinator refused: no DESCRIBE on the group.
			if sreq != nil {
				for _, g := range sreq.Groups {
					out[g] = access{denied: true}
				}
			}
			continue
		}
		resp := shard.Resp.(*kmsg.DescribeGroupsResponse)
		for _, g := range resp.Groups {
			a := access{}
			if errors.Is(kerr.ErrorForCode(g.ErrorCode), kerr.GroupAuthorizationFailed) {
				a.denied = true
			} else if a.ops, a.known = opsOf(g.AuthorizedOperations); !a.known {
				a.unchecked = fmt.Sprintf("the broker does not report the group's authorized operations (%v)", kerr.ErrorForCode(g.ErrorCode))
			}
			out[g.Group] = a
		}
	}
	return out, nil
}

// txnAccess asks whether transactional ids may be written, by ending a
// transaction of a producer that does not exist: the broker authorizes
// WRITE on the id first, then finds nothing to end (the coordinator
// lookup before it needs DESCRIBE, which WRITE implies).
func (p Profile) txnAccess(ctx context.Context, cl *kgo.Client, ids []string) (map[string]access, error) {
	out := map[string]access{}
	sort.Strings(ids)
	for _, id := range ids {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID = id
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case deniedType(err) == TransactionalID:
			out[id] = access{denied: true}
		case err != nil && !isKerr(err):
			return nil, p.Explain(err)
		default:
			// INVALID_PRODUCER_ID_MAPPING (or any other answer of the
			// coordinator): WRITE was authorized.
			out[id] = access{known: true, ops: map[Operation]bool{Write: true, Describe: true}}
		}
	}
	return out, nil
}

func isKerr(err error) bool {
	ke := (*kerr.Error)(nil)
	return errors.As(err, &ke)
}
