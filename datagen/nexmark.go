package datagen

import (
	"math"
	"strconv"
)

// Nexmark follows the Nexmark event generator (Apache Beam's
// org.apache.beam.sdk.nexmark.sources.generator and its Flink port,
// github.com/nexmark/nexmark) with its default GeneratorConfig:
//
//   - event kinds by event number: of every 50 events, number 0 is a
//     person, 1-3 are auctions and 4-49 are bids (PERSON_PROPORTION=1,
//     AUCTION_PROPORTION=3, BID_PROPORTION=46);
//   - person ids and auction ids derive from the event number
//     (lastBase0PersonId, lastBase0AuctionId), starting at
//     FIRST_PERSON_ID=1000 and FIRST_AUCTION_ID=1000; categories start at
//     FIRST_CATEGORY_ID=10, NUM_CATEGORIES=5;
//   - hot auctions (hotAuctionRatio=2): half the bids go to the latest
//     auction id rounded down to a multiple of HOT_AUCTION_RATIO=100; the
//     rest go to one of the last numInFlightAuctions=100 auctions (plus
//     AUCTION_ID_LEAD=10 not yet created);
//   - hot bidders (hotBiddersRatio=4): 3/4 of bids come from the latest
//     person id rounded down to a multiple of 100, plus 1; hot sellers
//     (hotSellersRatio=4) likewise for auction sellers (without the +1);
//     others pick one of the numActivePeople=1000 latest people (plus
//     PERSON_ID_LEAD=10);
//   - prices 10^(6u)*100 cents rounded; auction expiry 1 + a random value
//     up to twice the event-time span of numInFlightAuctions auctions;
//   - names, emails, credit cards, US cities and states, item names and
//     descriptions, and an "extra" padding field that brings the average
//     record size near avgPersonByteSize=200, avgAuctionByteSize=500 and
//     avgBidByteSize=100;
//   - bid channel and url as in the Flink port: half the bids use one of
//     the hot channels Google, Facebook, Baidu and Apple, the rest one of
//     10,000 "channel-N" channels, each with a fixed url;
//   - event time: base + event number × 100µs (firstEventRate=10,000/s),
//     truncated to milliseconds.
//
// Each event draws from its own RNG seeded with (Seed, event number), as
// the generator seeds java.util.Random with the event id, so the values
// differ from the Java generator's but the distributions and id formulas
// match. dateTime and expires are epoch milliseconds.
type nexmark struct {
	base
	personTopic, auctionTopic, bidTopic string

	name, email, desc []byte
	hotURLs           [len(hotChannels)]string
	channelURLs       []string
}

// Nexmark GeneratorConfig defaults and generator constants.
const (
	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	totalProportion   = personProportion + auctionProportion + bidProportion

	firstPersonID   = 1000
	firstAuctionID  = 1000
	firstCategoryID = 10
	numCategories   = 5

	numActivePeople     = 1000
	numInFlightAuctions = 100
	personIDLead        = 10
	auctionIDLead       = 10

	hotAuctionRatio = 2 // config: 1 in hotAuctionRatio bids are not hot
	hotBiddersRatio = 4
	hotSellersRatio = 4
	hotAuctionRound = 100 // HOT_AUCTION_RATIO in BidGenerator
	hotBidderRound  = 100 // HOT_BIDDER_RATIO
	hotSellerRound  = 100 // HOT_SELLER_RATIO in AuctionGenerator

	avgPersonByteSize  = 200
	avgAuctionByteSize = 500
	avgBidByteSize     = 100

	hotChannelsRatio = 2
	channelsNumber   = 10000
)

var (
	firstNames  = [...]string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames   = [...]string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	usStates    = [...]string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities    = [...]string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	hotChannels = [...]string{"Google", "Facebook", "Baidu", "Apple"}
)

func newNexmark(b base, prefix string) *nexmark {
	g := &nexmark{base: b, personTopic: prefix + "persons", auctionTopic: prefix + "auctions", bidTopic: prefix + "bids"}
	for i := range g.hotURLs {
		g.hotURLs[i] = g.baseURL(uint64(1<<40 + i))
	}
	return g
}

// NexmarkKind is the kind of Nexmark event number i: KindPerson,
// KindAuction or KindBid.
func NexmarkKind(i int64) string {
	switch rem := i % totalProportion; {
	case rem < personProportion:
		return KindPerson
	case rem < personProportion+auctionProportion:
		return KindAuction
	}
	return KindBid
}

// lastBase0PersonID is the id (from 0) of the last person created at or
// before event i.
func lastBase0PersonID(i int64) int64 {
	epoch, off := i/totalProportion, i%totalProportion
	if off >= personProportion {
		off = personProportion - 1
	}
	return epoch*personProportion + off
}

// lastBase0AuctionID is the id (from 0) of the last auction created at or
// before event i.
func lastBase0AuctionID(i int64) int64 {
	epoch, off := i/totalProportion, i%totalProportion
	switch {
	case off < personProportion:
		epoch--
		off = auctionProportion - 1
	case off >= personProportion+auctionProportion:
		off = auctionProportion - 1
	default:
		off -= personProportion
	}
	return epoch*auctionProportion + off
}

func (g *nexmark) nextBase0PersonID(i int64) int64 {
	numPeople := lastBase0PersonID(i) + 1
	active := min(numPeople, numActivePeople)
	return numPeople - active + g.rng.intn(active+personIDLead)
}

func (g *nexmark) nextBase0AuctionID(i int64) int64 {
	maxA := lastBase0AuctionID(i)
	minA := max(maxA-numInFlightAuctions, 0)
	return minA + g.rng.intn(maxA-minA+1+auctionIDLead)
}

func (g *nexmark) nextPrice() int64 {
	return int64(math.Round(math.Pow(10, g.rng.float()*6) * 100))
}

// appendString appends StringsGenerator.nextString(maxLength, special):
// 3 to maxLength-1 lower-case letters, about 1 in 13 replaced by special,
// trimmed of spaces.
func (g *nexmark) appendString(b []byte, maxLength int64, special byte) []byte {
	n := 3 + g.rng.intn(maxLength-3)
	start := len(b)
	for ; n > 0; n-- {
		if g.rng.intn(13) == 0 {
			b = append(b, special)
		} else {
			b = append(b, byte('a'+g.rng.intn(26)))
		}
	}
	// trim
	s, e := start, len(b)
	for s < e && b[s] == ' ' {
		s++
	}
	for e > s && b[e-1] == ' ' {
		e--
	}
	if s > start {
		copy(b[start:], b[s:e])
	}
	return b[:start+e-s]
}

// appendExtra appends StringsGenerator.nextExtra(currentSize,
// desiredAverageSize) as the "extra" field.
func (g *nexmark) appendExtra(b []byte, currentSize, desired int64) []byte {
	b = append(appendKey(b, false, "extra"), '"')
	if currentSize <= desired {
		desired -= currentSize
		delta := int64(math.Round(float64(desired) * 0.2))
		size := desired - delta
		if delta != 0 {
			size += g.rng.intn(2 * delta)
		}
		for ; size > 0; size-- {
			b = append(b, byte('a'+g.rng.intn(26)))
		}
	}
	return append(b, '"')
}

// baseURL is the Flink port's getBaseUrl, drawn from an RNG seeded with
// (Seed, salt) so it is deterministic.
func (g *nexmark) baseURL(salt uint64) string {
	saved := g.rng
	g.rng.seed(g.seed, salt)
	b := []byte("https://www.nexmark.com/")
	b = g.appendString(b, 5, '_')
	b = append(b, '/')
	b = g.appendString(b, 5, '_')
	b = append(b, '/')
	b = g.appendString(b, 5, '_')
	b = append(b, "/item.htm?query=1"...)
	s := string(b)
	g.rng = saved
	return s
}

// channelURL is the fixed url of "channel-n" (the Flink port's channel
// cache): the base url, 9 times in 10 followed by &channel_id=<reversed n>.
func (g *nexmark) channelURL(n int64) string {
	if g.channelURLs == nil {
		g.channelURLs = make([]string, channelsNumber)
	}
	if u := g.channelURLs[n]; u != "" {
		return u
	}
	u := g.baseURL(uint64(1<<41 + n))
	saved := g.rng
	g.rng.seed(g.seed, uint64(1<<42+n))
	if g.rng.intn(10) > 0 {
		r := int32(reverse32(uint32(n)))
		if r < 0 {
			r = -r
		}
		u += "&channel_id=" + strconv.FormatInt(int64(r), 10)
	}
	g.rng = saved
	g.channelURLs[n] = u
	return u
}

func reverse32(x uint32) uint32 {
	var r uint32
	for i := 0; i < 32; i++ {
		r = r<<1 | x&1
		x >>= 1
	}
	return r
}

func (g *nexmark) Next(dst *Record) {
	i, ms := g.begin(dst)
	switch NexmarkKind(i) {
	case KindPerson:
		g.person(dst, i, ms)
	case KindAuction:
		g.auction(dst, i, ms)
	default:
		g.bid(dst, i, ms)
	}
}

// person: {"id","name","emailAddress","creditCard","city","state",
// "dateTime","extra"}, key id.
func (g *nexmark) person(dst *Record, i, ms int64) {
	dst.Topic, dst.Kind = g.personTopic, KindPerson
	id := lastBase0PersonID(i) + firstPersonID
	g.name = append(append(append(g.name[:0], firstNames[g.rng.intn(int64(len(firstNames)))]...), ' '),
		lastNames[g.rng.intn(int64(len(lastNames)))]...)
	g.email = g.appendString(g.email[:0], 7, ' ')
	g.email = append(g.email, '@')
	g.email = g.appendString(g.email, 5, ' ')
	g.email = append(g.email, ".com"...)
	v := append(dst.Value, '{')
	v = appendInt(v, true, "id", id)
	v = appendStrB(v, false, "name", g.name)
	v = appendStrB(v, false, "emailAddress", g.email)
	v = append(appendKey(v, false, "creditCard"), '"')
	ccStart := len(v)
	for k := 0; k < 4; k++ {
		if k > 0 {
			v = append(v, ' ')
		}
		n := g.rng.intn(10000)
		v = append(v, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
	}
	ccLen := len(v) - ccStart
	v = append(v, '"')
	city := usCities[g.rng.intn(int64(len(usCities)))]
	state := usStates[g.rng.intn(int64(len(usStates)))]
	v = appendStr(v, false, "city", city)
	v = appendStr(v, false, "state", state)
	v = appendInt(v, false, "dateTime", ms)
	size := int64(8 + len(g.name) + len(g.email) + ccLen + len(city) + len(state))
	v = g.appendExtra(v, size, avgPersonByteSize)
	dst.Value = append(v, '}')
	dst.Key = strconv.AppendInt(dst.Key, id, 10)
}

// auction: {"id","itemName","description","initialBid","reserve",
// "dateTime","expires","seller","category","extra"}, key id.
func (g *nexmark) auction(dst *Record, i, ms int64) {
	dst.Topic, dst.Kind = g.auctionTopic, KindAuction
	id := lastBase0AuctionID(i) + firstAuctionID
	var seller int64
	if g.rng.intn(hotSellersRatio) > 0 {
		seller = lastBase0PersonID(i) / hotSellerRound * hotSellerRound
	} else {
		seller = g.nextBase0PersonID(i)
	}
	seller += firstPersonID
	category := firstCategoryID + g.rng.intn(numCategories)
	initialBid := g.nextPrice()
	// nextAuctionLengthMs: up to twice the event-time span in which
	// numInFlightAuctions auctions are created.
	horizon := g.msAt(i+numInFlightAuctions*totalProportion/auctionProportion) - ms
	expires := ms + 1 + g.rng.intn(max(horizon*2, 1))
	g.name = g.appendString(g.name[:0], 20, ' ')
	g.desc = g.appendString(g.desc[:0], 100, ' ')
	reserve := initialBid + g.nextPrice()
	v := append(dst.Value, '{')
	v = appendInt(v, true, "id", id)
	v = appendStrB(v, false, "itemName", g.name)
	v = appendStrB(v, false, "description", g.desc)
	v = appendInt(v, false, "initialBid", initialBid)
	v = appendInt(v, false, "reserve", reserve)
	v = appendInt(v, false, "dateTime", ms)
	v = appendInt(v, false, "expires", expires)
	v = appendInt(v, false, "seller", seller)
	v = appendInt(v, false, "category", category)
	v = g.appendExtra(v, int64(8+len(g.name)+len(g.desc)+8+8+8+8+8), avgAuctionByteSize)
	dst.Value = append(v, '}')
	dst.Key = strconv.AppendInt(dst.Key, id, 10)
}

// bid: {"auction","bidder","price","channel","url","dateTime","extra"},
// key auction.
func (g *nexmark) bid(dst *Record, i, ms int64) {
	dst.Topic, dst.Kind = g.bidTopic, KindBid
	var auction int64
	if g.rng.intn(hotAuctionRatio) > 0 {
		auction = lastBase0AuctionID(i) / hotAuctionRound * hotAuctionRound
	} else {
		auction = g.nextBase0AuctionID(i)
	}
	auction += firstAuctionID
	var bidder int64
	if g.rng.intn(hotBiddersRatio) > 0 {
		bidder = lastBase0PersonID(i)/hotBidderRound*hotBidderRound + 1
	} else {
		bidder = g.nextBase0PersonID(i)
	}
	bidder += firstPersonID
	price := g.nextPrice()
	v := append(dst.Value, '{')
	v = appendInt(v, true, "auction", auction)
	v = appendInt(v, false, "bidder", bidder)
	v = appendInt(v, false, "price", price)
	if g.rng.intn(hotChannelsRatio) > 0 {
		k := g.rng.intn(int64(len(hotChannels)))
		v = appendStr(v, false, "channel", hotChannels[k])
		v = appendStr(v, false, "url", g.hotURLs[k])
	} else {
		n := g.rng.intn(channelsNumber)
		v = appendPrefixed(v, false, "channel", "channel-", n)
		v = appendStr(v, false, "url", g.channelURL(n))
	}
	v = appendInt(v, false, "dateTime", ms)
	v = g.appendExtra(v, 8+8+8+8, avgBidByteSize)
	dst.Value = append(v, '}')
	dst.Key = strconv.AppendInt(dst.Key, auction, 10)
}
