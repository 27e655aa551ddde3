package server

// The HELP subcommands. Redis answers <CMD> HELP with an array of status
// lines: a first line naming the command, then each subcommand's usage
// followed by its description indented by four spaces, and last HELP
// itself. gostore keeps that shape (clients and people read it) and lists
// only the subcommands it answers, in its own words.

// help writes cmd's HELP reply: the heading, lines, and the HELP entry.
func (r *reply) help(cmd string, lines []string) {
	r.array(len(lines) + 3)
	r.simple(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		r.simple(l)
	}
	r.simple("HELP")
	r.simple("    Prints this help.")
}

var clientHelp = []string{
	"CACHING (YES|NO)",
	"    In OPTIN (OPTOUT) tracking, track (do not track) the keys the next",
	"    command reads.",
	"GETNAME",
	"    Answer this connection's name, or nil if it has none.",
	"GETREDIR",
	"    Answer the ID tracking invalidations are redirected to: 0 for none,",
	"    -1 when not tracking.",
	"ID",
	"    Answer this connection's unique ID.",
	"INFO",
	"    Describe this connection, in the format of CLIENT LIST.",
	"REPLY (ON|OFF|SKIP)",
	"    Turn the replies to this connection's commands off, back on, or off",
	"    for the next command only.",
	"KILL <ip:port>",
	"    Close the connection from that address.",
	"KILL <filter> <value> [<filter> <value> ...]",
	"    Close the connections that match every filter, and count them.",
	"    Filters: ID <client-id>, ADDR <ip:port>, LADDR <ip:port>,",
	"    TYPE (NORMAL|PUBSUB|MASTER|REPLICA), USER <username>,",
	"    SKIPME (YES|NO) (whether to spare this connection; default YES).",
	"LIST [TYPE (NORMAL|PUBSUB|MASTER|REPLICA)] [ID <client-id> [<client-id> ...]]",
	"    Describe the connections this user may see, one per line.",
	"SETINFO (LIB-NAME|LIB-VER) <value>",
	"    Record the client library's name or version, shown in CLIENT LIST.",
	"SETNAME <name>",
	"    Name this connection (no spaces or special characters).",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Client-side caching: be told when keys this connection read (or, with",
	"    BCAST, any key with a prefix) change, by whoever changed them.",
	"TRACKINGINFO",
	"    Describe this connection's tracking: flags, redirect and prefixes.",
}

var commandHelp = []string{
	"(no subcommand)",
	"    Describe every command the server answers.",
	"COUNT",
	"    Answer how many commands the server answers.",
	"DOCS [<command-name> ...]",
	"    Summarise the named commands and their arguments, or every command if",
	"    none is named (redis-cli builds its help and hints from this).",
	"INFO [<command-name> ...]",
	"    Describe the named commands, or every command if none is named:",
	"    arity, flags and where their keys are.",
	"GETKEYS <full-command>",
	"    Answer the keys a full command names.",
}

var configHelp = []string{
	"GET <pattern> [<pattern> ...]",
	"    Answer the parameters whose names match the glob patterns, and their",
	"    values.",
	"SET <parameter> <value> [<parameter> <value> ...]",
	"    Change parameters while the server runs: all of them, or none if one",
	"    is refused.",
	"RESETSTAT",
	"    Zero the counters that INFO reports.",
}

var memoryHelp = []string{
	"USAGE <key> [SAMPLES <count>]",
	"    Estimate the bytes that <key> and its value take. Every field of a",
	"    hash is counted, so <count> changes nothing.",
}

var objectHelp = []string{
	"ENCODING <key>",
	"    Answer the encoding Redis would use for the value of <key>.",
	"FREQ <key>",
	"    Refused: access frequency is tracked only under an LFU eviction",
	"    policy, and gostore evicts nothing.",
	"IDLETIME <key>",
	"    Answer how many seconds <key> has gone unused (always 0 here).",
	"REFCOUNT <key>",
	"    Answer how many references the value of <key> has (always 1 here).",
}

var pubsubHelp = []string{
	"CHANNELS [<pattern>]",
	"    List the channels with subscribers, those matching <pattern> if given.",
	"NUMPAT",
	"    Count the pattern subscriptions.",
	"NUMSUB [<channel> ...]",
	"    Count each named channel's subscribers (patterns aside).",
	"SHARDCHANNELS [<pattern>]",
	"    List the shard channels with subscribers (none: gostore has no shards).",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Count each named shard channel's subscribers (always 0).",
}
