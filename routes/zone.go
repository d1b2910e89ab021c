package routes

// The person's time zone: pages write times in it, and the List's from and
// to are dates in it. The browser says its zone (app.js writes the IANA
// name it reports into the tz cookie); without one, or with one that is not
// a zone, pages are in UTC and say so.

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

const (
	// zoneCookie carries the browser's IANA time zone ("Europe/Berlin").
	zoneCookie = "tz"
	// zoneMaxLen bounds the name read: the longest IANA name is 32
	// characters ("America/Argentina/ComodRivadavia").
	zoneMaxLen = 64
	zoneLocal  = "orders.zone"
	// timeLayout is how pages write a time: the date as YYYY-MM-DD, the
	// time to the minute, and the zone's abbreviation ("UTC", "CET").
	timeLayout = "2006-01-02 15:04 MST"
)

// zones keeps the locations already loaded: loading reads the zone
// database. Only names that loaded are kept, so it holds at most the
// database's few hundred zones.
var zones sync.Map // name → *time.Location

// zoneOf is the zone c's person reads times in: the tz cookie's zone when
// it names one, else UTC.
func zoneOf(c *fiber.Ctx) *time.Location {
	if loc, ok := c.Locals(zoneLocal).(*time.Location); ok {
		return loc
	}
	loc := parseZone(c.Cookies(zoneCookie))
	c.Locals(zoneLocal, loc)
	return loc
}

// parseZone is the zone an IANA name names, or UTC for anything else: an
// empty or over-long value, "Local" (the server's zone, not the person's),
// a path out of the zone database, a name the database does not know.
func parseZone(name string) *time.Location {
	if name == "" || len(name) > zoneMaxLen || name == "Local" {
		return time.UTC
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9',
			b == '/', b == '_', b == '-', b == '+':
		default:
			return time.UTC
		}
	}
	if name[0] == '/' || strings.Contains(name, "..") {
		return time.UTC
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	zones.Store(name, loc)
	return loc
}

// zoneMark is the part of an HTML answer's ETag that names the zone its
// times are written in: "z" and a hash of the zone's name, nothing for UTC.
// A page drawn for one zone is no match for a browser in another.
func zoneMark(loc *time.Location) string {
	if loc == time.UTC {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(loc.String()))
	return fmt.Sprintf("z%08x", h.Sum32())
}

// isZoneMark reports whether part of a tag is a mark zoneMark gives.
func isZoneMark(part string) bool {
	if len(part) != 9 || part[0] != 'z' {
		return false
	}
	for i := 1; i < len(part); i++ {
		if b := part[i]; !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f') {
			return false
		}
	}
	return true
}

// zoned writes times for the person a page is drawn for: in their zone,
// labelled with it. The zero value writes UTC.
type zoned struct{ loc *time.Location }

func (z zoned) zone() *time.Location {
	if z.loc == nil {
		return time.UTC
	}
	return z.loc
}

// Date is t as pages show it: "2025-01-31 15:05 CET", "2025-01-31 14:05 UTC".
func (z zoned) Date(t time.Time) string { return t.In(z.zone()).Format(timeLayout) }

// ZoneName is the zone's IANA name ("Europe/Berlin", "UTC"): what the
// date filters' days are in.
func (z zoned) ZoneName() string { return z.zone().String() }
