package expr

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/types"
)

func TestTimeFormatPatterns(t *testing.T) {
	instant := time.Date(2021, 4, 1, 9, 5, 7, 89e6, time.UTC) // a Thursday
	zone := func(id string) *time.Location {
		l, err := loadZone(id)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		pattern, zone, want string
	}{
		{"yyyy-MM-dd HH:mm:ss.SSS", "UTC", "2021-04-01 09:05:07.089"},
		{"yy/M/d h:m:s a", "UTC", "21/4/1 9:5:7 AM"},
		{"EEE, dd MMM yyyy", "UTC", "Thu, 01 Apr 2021"},
		{"EEEE MMMM", "UTC", "Thursday April"},
		{"MMMMM EEEEE", "UTC", "A T"},
		{"D DDD", "UTC", "91 091"},
		{"Q QQ QQQ QQQQ", "UTC", "2 02 Q2 2nd quarter"},
		{"yyyy-MM-dd'T'HH:mm:ssXXX", "UTC", "2021-04-01T09:05:07Z"},
		{"yyyy-MM-dd''HH", "UTC", "2021-04-01'09"},
		{"'o''clock' H", "UTC", "o'clock 9"},
		{"xxx Z O VV z", "UTC", "+00:00 +0000 GMT UTC UTC"},
		{"SSSSSS S", "UTC", "089000 0"},
		{"A n", "UTC", "32707089 89000000"},
		{"k K h H", "UTC", "9 9 9 9"},
		{"G u Y", "UTC", "AD 2021 2021"},
		{"e c eee w W F", "UTC", "5 5 Thu 14 1 1"},
		{"[yyyy][-MM]", "UTC", "2021-04"},
		{"yyyy-MM-dd HH:mm z XXX", "America/New_York", "2021-04-01 05:05 EDT -04:00"},
		{"O OOOO ZZZZ ZZZZZ X XX x", "America/New_York", "GMT-4 GMT-04:00 GMT-04:00 -04:00 -04 -0400 -04"},
		{"VV zzzz", "America/New_York", "America/New_York America/New_York"},
		{"HH:mm X XX XXX O", "Asia/Kolkata", "14:35 +0530 +0530 +05:30 GMT+5:30"},
		{"HH:mm", "PST", "02:05"},
		{"HH:mm", "EST", "04:05"},
		{"HH:mm VV", "+02:00", "11:05 +02:00"},
		{"HH:mm", "UTC+01:30", "10:35"},
		{"HH:mm", "GMT-8", "01:05"},
	} {
		f, err := compileTimeFormat(c.pattern)
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		if got := string(f.appendFormat(nil, instant.In(zone(c.zone)))); got != c.want {
			t.Errorf("format %q in %s = %q, want %q", c.pattern, c.zone, got, c.want)
		}
	}
	// the week-based year of the first days of January
	f, _ := compileTimeFormat("YYYY-ww")
	for day, want := range map[string]string{"2021-01-01": "2021-01", "2020-12-31": "2021-01", "2020-12-26": "2020-52", "2022-01-02": "2022-02"} {
		d, _ := time.Parse("2006-01-02", day)
		if got := string(f.appendFormat(nil, d)); got != want {
			t.Errorf("YYYY-ww of %s = %s, want %s", day, got, want)
		}
	}
}

func TestTimeParsePatterns(t *testing.T) {
	for _, c := range []struct {
		text, pattern, zone, want string
	}{
		{"2021-04-01 09:05:07.089", "yyyy-MM-dd HH:mm:ss.SSS", "UTC", "2021-04-01T09:05:07.089"},
		{"20210401", "yyyyMMdd", "UTC", "2021-04-01T00:00:00.000"},
		{"202104010905", "yyyyMMddHHmm", "UTC", "2021-04-01T09:05:00.000"},
		{"01/Apr/2021:09:05:07 +0200", "dd/MMM/yyyy:HH:mm:ss Z", "UTC", "2021-04-01T07:05:07.000"},
		{"01/apr/2021", "dd/MMM/yyyy", "UTC", "2021-04-01T00:00:00.000"},
		{"Thursday, April 1, 2021", "EEEE, MMMM d, yyyy", "UTC", "2021-04-01T00:00:00.000"},
		{"2021-04-01T09:05:07Z", "yyyy-MM-dd'T'HH:mm:ssX", "America/New_York", "2021-04-01T09:05:07.000"},
		{"2021-04-01T09:05:07+05:30", "yyyy-MM-dd'T'HH:mm:ssXXX", "UTC", "2021-04-01T03:35:07.000"},
		{"2021-04-01T09:05:07-0800", "yyyy-MM-dd'T'HH:mm:ssxx", "UTC", "2021-04-01T17:05:07.000"},
		{"2021-04-01 09:05 GMT+2", "yyyy-MM-dd HH:mm O", "UTC", "2021-04-01T07:05:00.000"},
		{"4/1/21 9:05 PM", "M/d/yy h:mm a", "UTC", "2021-04-01T21:05:00.000"},
		{"4/1/21 12:05 AM", "M/d/yy hh:mm a", "UTC", "2021-04-01T00:05:00.000"},
		{"2021-04-01 12:00", "yyyy-MM-dd HH:mm", "America/New_York", "2021-04-01T16:00:00.000"},
		{"2021-01-01 12:00", "yyyy-MM-dd HH:mm", "America/New_York", "2021-01-01T17:00:00.000"},
		{"2021-04-01 12:00 America/Los_Angeles", "yyyy-MM-dd HH:mm VV", "UTC", "2021-04-01T19:00:00.000"},
		{"2021-04-01 12:00 PST", "yyyy-MM-dd HH:mm z", "UTC", "2021-04-01T19:00:00.000"},
		{"2021-04-01 12:00 UTC", "yyyy-MM-dd HH:mm z", "Asia/Tokyo", "2021-04-01T12:00:00.000"},
		{"2021-091", "yyyy-DDD", "UTC", "2021-04-01T00:00:00.000"},
		{"2021-04-01", "yyyy-MM-dd[ HH:mm]", "UTC", "2021-04-01T00:00:00.000"},
		{"2021-04-01 10:30", "yyyy-MM-dd[ HH:mm]", "UTC", "2021-04-01T10:30:00.000"},
		{"2021-04-01 10:30:15", "yyyy-MM-dd[ HH:mm[:ss]]", "UTC", "2021-04-01T10:30:15.000"},
		{"2021-02-30", "yyyy-MM-dd", "UTC", "2021-02-28T00:00:00.000"},
		{"2020-02-31", "yyyy-MM-dd", "UTC", "2020-02-29T00:00:00.000"},
		{"09:05", "HH:mm", "UTC", "1970-01-01T09:05:00.000"},
		{"1.5", "s.S", "UTC", "1970-01-01T00:00:01.500"},
		{"24:00", "kk:mm", "UTC", "1970-01-01T00:00:00.000"},
		{"2021-03-14 02:30", "yyyy-MM-dd HH:mm", "America/New_York", "2021-03-14T07:30:00.000"}, // in the DST gap: moved forward
		{"2021-11-07 01:30", "yyyy-MM-dd HH:mm", "America/New_York", "2021-11-07T05:30:00.000"}, // ambiguous: the earlier offset
		{"0044 BC", "yyyy G", "UTC", "-0043-01-01T00:00:00.000"},
		{"12345", "A", "UTC", "1970-01-01T00:00:12.345"},
	} {
		f, err := compileTimeFormat(c.pattern)
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		loc, _ := loadZone(c.zone)
		p, err := f.parse(c.text)
		if err != nil {
			t.Errorf("parse %q with %q: %v", c.text, c.pattern, err)
			continue
		}
		ms, err := p.instant(loc)
		if err != nil {
			t.Errorf("parse %q with %q: %v", c.text, c.pattern, err)
			continue
		}
		if got := string(appendTimestamp(nil, ms)); got != c.want {
			t.Errorf("parse %q with %q in %s = %s, want %s", c.text, c.pattern, c.zone, got, c.want)
		}
	}
	for _, c := range []struct{ text, pattern string }{
		{"2021-13-01", "yyyy-MM-dd"},
		{"2021-04-32", "yyyy-MM-dd"},
		{"2021-04-01x", "yyyy-MM-dd"},
		{"21-04-01", "yyyy-MM-dd"},
		{"2021/04/01", "yyyy-MM-dd"},
		{"25:00", "HH:mm"},
		{"10:61", "HH:mm"},
		{"Foo 1", "MMM d"},
		{"2021-04-01 12:00 Nowhere/City", "yyyy-MM-dd HH:mm VV"},
		{"", "yyyy"},
		{"1.50", "s.S"},
	} {
		f, err := compileTimeFormat(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.parse(c.text)
		if err == nil {
			_, err = p.instant(time.UTC)
		}
		if err == nil {
			t.Errorf("parse %q with %q succeeded", c.text, c.pattern)
		}
	}
}

func TestTimePatternErrors(t *testing.T) {
	for pattern, word := range map[string]string{
		"yyyy-MM-ddTHH:mm": "unknown pattern letter 'T'",
		"HHH":              "wrong number",
		"SSSSSSSSSS":       "wrong number",
		"V":                "wrong number",
		"'unterminated":    "unterminated",
		"{yyyy}":           "reserved",
		"#":                "reserved",
		"[yyyy":            "[ without ]",
		"yyyy]":            "] without [",
		"bbb":              "unknown pattern letter",
	} {
		if _, err := compileTimeFormat(pattern); err == nil || !strings.Contains(err.Error(), word) {
			t.Errorf("pattern %q: %v, want an error about %s", pattern, err, word)
		}
	}
}

func TestZones(t *testing.T) {
	at := time.Date(2021, 7, 1, 12, 0, 0, 0, time.UTC)
	for id, offset := range map[string]int{
		"UTC": 0, "Z": 0, "GMT": 0, "America/Los_Angeles": -7 * 3600, "PST": -7 * 3600, "EST": -5 * 3600,
		"IST": 5*3600 + 1800, "+05:30": 5*3600 + 1800, "-08:00": -8 * 3600, "UTC+1": 3600, "GMT-0830": -(8*3600 + 1800),
		"Europe/London": 3600, "Etc/UTC": 0,
	} {
		loc, err := loadZone(id)
		if err != nil {
			t.Errorf("zone %q: %v", id, err)
			continue
		}
		if _, off := at.In(loc).Zone(); off != offset {
			t.Errorf("zone %q offset %d, want %d", id, off, offset)
		}
	}
	for _, id := range []string{"Mars/Olympus", "+25:00", "UTC+", "America/New York", "../etc/passwd", "Local"} {
		if _, err := loadZone(id); err == nil {
			t.Errorf("zone %q accepted", id)
		}
	}
}

// TestFormatTimestampSpanMemo checks FORMAT_TIMESTAMP and DATE_FORMAT,
// which reuse their last text while the time stays in the pattern's span,
// against formatting each time afresh: times in order (many in one span,
// across span ends, negative ones), at random, with patterns of every
// unit and with zones (no reuse: exact times only).
func TestFormatTimestampSpanMemo(t *testing.T) {
	patterns := []string{"yyyy-MM-dd", "yyyy-MM-dd HH", "HH:mm", "mm:ss", "ss.SSS", "a", "EEE w W F", "''", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "zzzz Z"}
	var times []int64
	for ms := int64(-3 * msPerDay); ms < 3*msPerDay; ms += 997 * 61 {
		times = append(times, ms, ms, ms+1)
	}
	for _, b := range []int64{0, msPerDay, msPerDay / 2, 3600000, 60000, 1000, 1619827200000} {
		times = append(times, b-1, b, b+1, -b-1, -b, -b+1, b-1)
	}
	times = append(times, math.MinInt64/2, math.MaxInt64/2)
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 2000; i++ {
		times = append(times, 1619827200000+rng.Int63n(3*msPerDay)-msPerDay)
	}
	for _, name := range []string{"FORMAT_TIMESTAMP", "DATE_FORMAT"} {
		fn, _ := Lookup(name)
		for _, zone := range []string{"", "America/Los_Angeles"} {
			if zone != "" && name == "DATE_FORMAT" {
				continue
			}
			for _, p := range patterns {
				f, err := compileTimeFormat(p)
				if err != nil {
					t.Fatal(err)
				}
				loc := time.UTC
				args := []types.Datum{{}, {B: []byte(p)}}
				if zone != "" {
					loc, _ = time.LoadLocation(zone)
					args = append(args, types.Datum{B: []byte(zone)})
				}
				impl := fn.New(nil)
				for _, ms := range times {
					args[0] = types.IntDatum(ms)
					got, err := impl(args)
					if err != nil {
						t.Fatal(err)
					}
					want := f.appendFormat(nil, time.UnixMilli(ms).In(loc))
					if string(got.B) != string(want) {
						t.Fatalf("%s(%d, %q, %q) = %q, want %q", name, ms, p, zone, got.B, want)
					}
				}
			}
		}
	}
}
