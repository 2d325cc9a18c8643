package datagen

import "strconv"

// The ksqlDB quickstart generators (ksql-datagen's pageviews, users and
// orders schemas), with upper-case field names as ksqlDB's quickstart uses.

// pageviews: key USERID, value
// {"VIEWTIME":<event ms>,"USERID":"User_1".."User_9","PAGEID":"Page_1".."Page_99"}.
type pageviews struct {
	base
	topic string
}

func (g *pageviews) Next(dst *Record) {
	_, ms := g.begin(dst)
	dst.Topic, dst.Kind = g.topic, "pageviews"
	user := 1 + g.rng.intn(9)
	page := 1 + g.rng.intn(99)
	dst.Key = strconv.AppendInt(append(dst.Key, "User_"...), user, 10)
	v := append(dst.Value, '{')
	v = appendInt(v, true, "VIEWTIME", ms)
	v = appendStrB(v, false, "USERID", dst.Key)
	v = appendPrefixed(v, false, "PAGEID", "Page_", page)
	dst.Value = append(v, '}')
}

var genders = [...]string{"MALE", "FEMALE", "OTHER"}

// users: key USERID, value
// {"REGISTERTIME":<ms>,"USERID":"User_N","REGIONID":"Region_N","GENDER":...}.
// REGISTERTIME is random in ksql-datagen's range (1487715775521 to
// 1519273364600), as in the quickstart.
type users struct {
	base
	topic string
}

func (g *users) Next(dst *Record) {
	g.begin(dst)
	dst.Topic, dst.Kind = g.topic, "users"
	reg := 1487715775521 + g.rng.intn(1519273364600-1487715775521)
	user := 1 + g.rng.intn(9)
	region := 1 + g.rng.intn(9)
	gender := genders[g.rng.intn(int64(len(genders)))]
	dst.Key = strconv.AppendInt(append(dst.Key, "User_"...), user, 10)
	v := append(dst.Value, '{')
	v = appendInt(v, true, "REGISTERTIME", reg)
	v = appendStrB(v, false, "USERID", dst.Key)
	v = appendPrefixed(v, false, "REGIONID", "Region_", region)
	v = appendStr(v, false, "GENDER", gender)
	dst.Value = append(v, '}')
}

// orders: key ORDERID (the event index, as ksql-datagen's incrementing
// orderid), value {"ORDERTIME":<event ms>,"ORDERID":n,"ITEMID":"Item_N",
// "ORDERUNITS":0.1..10,"ADDRESS":{"CITY":"City_N","STATE":"State_N",
// "ZIPCODE":10000..99999}}.
type orders struct {
	base
	topic string
}

func (g *orders) Next(dst *Record) {
	i, ms := g.begin(dst)
	dst.Topic, dst.Kind = g.topic, "orders"
	item := 1 + g.rng.intn(999)
	// Two decimals, 0.10 to 10.00.
	units := float64(10+g.rng.intn(991)) / 100
	city := 1 + g.rng.intn(99)
	state := 1 + g.rng.intn(99)
	zip := 10000 + g.rng.intn(90000)
	dst.Key = strconv.AppendInt(dst.Key, i, 10)
	v := append(dst.Value, '{')
	v = appendInt(v, true, "ORDERTIME", ms)
	v = appendInt(v, false, "ORDERID", i)
	v = appendPrefixed(v, false, "ITEMID", "Item_", item)
	v = appendFloat(v, false, "ORDERUNITS", units)
	v = append(appendKey(v, false, "ADDRESS"), '{')
	v = appendPrefixed(v, true, "CITY", "City_", city)
	v = appendPrefixed(v, false, "STATE", "State_", state)
	v = appendInt(v, false, "ZIPCODE", zip)
	dst.Value = append(v, '}', '}')
}
