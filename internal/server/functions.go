package server

import "strings"

// FUNCTION: Redis 7's function libraries. gostore has no function engine
// (FUNCTION LOAD and FCALL are unknown, as in a Redis built without one),
// so there are never any libraries: FLUSH has nothing to delete, LIST and
// STATS answer, in Redis's reply shapes, that there is nothing, and
// DELETE finds no library. Clients and test harnesses that clear the
// functions before they start (Redis's own test suite sends FUNCTION
// FLUSH before every unit) work unchanged.

// functionSubs are FUNCTION's subcommands and their arities.
var functionSubs = map[string]int{"flush": -2, "list": -2, "stats": 2, "delete": 3, "kill": 2, "help": 2}

func cmdFunction(x *exec) {
	switch strings.ToLower(x.arg(1)) {
	case "flush":
		if len(x.args) > 3 || (len(x.args) == 3 && !lowerEq(x.args[2], "sync") && !lowerEq(x.args[2], "async")) {
			x.fail("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
		x.r.ok()
	case "list":
		for i := 2; i < len(x.args); i++ {
			switch {
			case lowerEq(x.args[i], "withcode"):
			case lowerEq(x.args[i], "libraryname"):
				if i+1 >= len(x.args) {
					x.fail("ERR library name argument was not given")
					return
				}
				i++
			default:
				x.fail("ERR Unknown argument " + x.arg(i))
				return
			}
		}
		x.r.array(0)
	case "stats":
		// No script is running and there is no engine to list.
		x.r.mapHeader(2)
		x.r.bulk("running_script")
		x.r.null()
		x.r.bulk("engines")
		x.r.mapHeader(0)
	case "delete":
		x.fail("ERR Library not found")
	case "kill":
		x.fail("NOTBUSY No scripts in execution right now.")
	default: // help
		x.r.help("FUNCTION", functionHelp)
	}
}

var functionHelp = []string{
	"LIST [LIBRARYNAME <pattern>] [WITHCODE]",
	"    Answer the function libraries: gostore has none, so an empty list.",
	"STATS",
	"    Answer the running function (none) and the function engines (none).",
	"FLUSH [ASYNC|SYNC]",
	"    Delete every library: there are none, so this does nothing.",
	"DELETE <library-name>",
	"    Delete a library: there are none to find.",
	"KILL",
	"    Stop the running function: there is never one.",
}
