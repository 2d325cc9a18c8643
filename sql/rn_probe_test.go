package sql
import "testing"
func TestRNProbe(t *testing.T) {
	for _, q := range []string{
		"SELECT * FROM (SELECT userid, pageid, ROW_NUMBER() OVER (PARTITION BY userid ORDER BY viewtime DESC) AS rn FROM pageviews) WHERE rn <= 2 EMIT CHANGES",
		"SELECT userid, ROW_NUMBER() OVER (PARTITION BY userid ORDER BY viewtime DESC) AS rn FROM pageviews EMIT CHANGES",
	} {
		st, err := Parse(q)
		t.Logf("%v %v", err, st)
		if err == nil {
			s := st.(*Select)
			t.Logf("rw: %s", s.rw.text)
			_, err = BindSelect(s, testCatalog())
			t.Logf("bind: %v", err)
		}
	}
}
