/*-------------------------------------------------------------------------
 *
 * pg_qopt.c
 *		Ask a learned query rewriter (the model server of rlsuite's
 *		query-optimizer app) how to plan each top-level SELECT.
 *
 * When qopt.enabled is on, the planner hook sends the statement's text to
 * the model server (qopt.server: a Unix socket path, or localhost:PORT) as
 * one line of JSON and reads one line of JSON back:
 *
 *	 request:  {"op": "plan", "sql": "...", "search_path": "...",
 *			   "database": "...", "mode": "rewrite"}
 *	 answer:   {"sql": "... or null", "arm": {"enable_x": "off", ...},
 *			   "key": "...", "note": "..."}  or  {"error": "..."}
 *
 * In qopt.mode = rewrite the returned SQL is parsed, analysed and rewritten
 * (views) here, checked to be exactly one SELECT returning the same number
 * and types of columns, given the original column names, and planned in
 * place of the original; the arm's settings (enable_*, join_collapse_limit,
 * from_collapse_limit, geqo) hold while it is planned.  In qopt.mode = arms
 * only the settings are used, around planning the original query.  The
 * settings are restored afterwards (a GUC nest level, undone in PG_FINALLY).
 *
 * Failure is always safe: an unreachable server, an answer slower than
 * qopt.timeout_ms, a malformed answer, or a rewrite that fails to parse,
 * analyse or plan (all of it runs in a subtransaction) means the standard
 * planner; the first such failure of a session raises a WARNING, later ones
 * are silent.  Query cancellation is never swallowed.
 *
 * What is asked: only top-level SELECTs (executor and utility nesting level
 * 0, and the planner not re-entered), plus the query of a top-level EXPLAIN.
 * Not asked: statements with parameters ($1: extended-protocol and PREPAREd
 * statements with parameters, so a prepared statement's generic plan is the
 * standard one), queries inside functions, DO blocks, triggers, DECLARE
 * CURSOR, CREATE TABLE AS / SELECT INTO, SELECT ... FOR UPDATE/SHARE and
 * data-modifying CTEs.  A protocol-level prepared statement without
 * parameters is asked when its plan is built and keeps that plan (by the
 * code path; the tests use the simple query protocol).
 *
 * Rewards: the executor's wall time of a plan made with an answer is sent
 * back, unless the run is EXPLAIN-only or qopt.send_rewards is off.  At
 * ExecutorEnd it is held in the backend, and the held rewards ride along with
 * the next plan request ("rewards": [{"key": ..., "ms": ...}, ...]), so a busy
 * session pays no connection of its own per reward.  They are sent on their own
 * ({"op": "rewards", "items": [...]}, no reply awaited) when nothing was sent
 * for a second (a quiet session reports each execution at once), when
 * qopt.reward_batch of them are held, and when the backend exits.
 * An answer with a key but neither SQL nor arm asks for the standard plan
 * to be measured: the original is planned as usual and its runtime sent
 * back under that key (the model server's baseline for learning and for
 * catching regressions).
 * Plans that the plan cache copies (extended protocol) send no reward.
 *
 * EXPLAIN shows a "Query Optimizer" line (TEXT, JSON and YAML formats) with
 * what the plugin did.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteHandler.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

#define QOPT_MAX_ANSWER (4 * 1024 * 1024)
#define QOPT_NOTE_LEN 512
#define QOPT_KEY_LEN 128

typedef enum
{
	QOPT_MODE_OFF,
	QOPT_MODE_REWRITE,
	QOPT_MODE_ARMS
} QoptMode;

static const struct config_enum_entry mode_options[] = {
	{"rewrite", QOPT_MODE_REWRITE, false},
	{"arms", QOPT_MODE_ARMS, false},
	{"off", QOPT_MODE_OFF, false},
	{NULL, 0, false}
};

/* settings */
static bool qopt_enabled = false;
static char *qopt_server = NULL;
static int	qopt_timeout_ms = 50;
static int	qopt_mode = QOPT_MODE_REWRITE;
static bool qopt_send_rewards = true;
static int	qopt_reward_batch = 32;

/* saved hooks */
static planner_hook_type prev_planner = NULL;
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static ExplainOneQuery_hook_type prev_ExplainOneQuery = NULL;

/* nesting: executor runs and utility statements; planner re-entry */
static int	nesting = 0;
static int	planner_depth = 0;

/* a top-level EXPLAIN: where its text is, and whether its query is planned now */
static bool explain_pending = false;
static int	explain_loc = 0;
static int	explain_len = 0;
static bool explain_top = false;

/* at most one WARNING per session */
static bool warned = false;

/* what the plugin did for the last query it was asked about (for EXPLAIN) */
static bool have_note = false;
static char last_note[QOPT_NOTE_LEN];

/* rewards: the plan made with an answer, and the execution being timed */
static PlannedStmt *pending_plan = NULL;
static char pending_key[QOPT_KEY_LEN];
static QueryDesc *timed_desc = NULL;
static char timed_key[QOPT_KEY_LEN];
static TimestampTz timed_start = 0;

/* rewards held for the next plan request: JSON objects separated by commas */
static StringInfo held_rewards = NULL;
static int	held_count = 0;
static TimestampTz last_rewards_sent = 0;

#define QOPT_REWARD_HOLD_MS 1000


/* ------------------------------------------------------------------------
 * Talking to the model server: plan requests over one kept connection per
 * session, rewards sent alone on a connection of their own; every step
 * bounded by the deadline (poll()), no PostgreSQL errors raised here.
 * ------------------------------------------------------------------------
 */

static int
ms_left(TimestampTz deadline)
{
	TimestampTz now = GetCurrentTimestamp();

	if (now >= deadline)
		return 0;
	return (int) ((deadline - now + 999) / 1000);
}

static bool
wait_for(int fd, short events, TimestampTz deadline, char *err, size_t errlen)
{
	for (;;)
	{
		struct pollfd p;
		int			left = ms_left(deadline);
		int			rc;

		if (left <= 0)
		{
			snprintf(err, errlen, "no answer within qopt.timeout_ms = %d ms", qopt_timeout_ms);
			return false;
		}
		p.fd = fd;
		p.events = events;
		p.revents = 0;
		rc = poll(&p, 1, left);
		if (rc > 0)
			return true;
		if (rc == 0)
			continue;			/* re-check the deadline */
		if (errno == EINTR)
			continue;
		snprintf(err, errlen, "poll failed: %s", strerror(errno));
		return false;
	}
}

/* Parse "localhost:PORT", "127.0.0.1:PORT", "[::1]:PORT" or "::1:PORT". */
static bool
parse_tcp(const char *s, struct sockaddr_storage *addr, socklen_t *len)
{
	const char *colon = strrchr(s, ':');
	char		host[64];
	size_t		hlen;
	long		port;
	char	   *end;

	if (colon == NULL)
		return false;
	hlen = colon - s;
	if (hlen == 0 || hlen >= sizeof(host))
		return false;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || port < 1 || port > 65535)
		return false;
	memset(addr, 0, sizeof(*addr));
	if (strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0)
	{
		struct sockaddr_in *a = (struct sockaddr_in *) addr;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16) port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*a);
		return true;
	}
	if (strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0)
	{
		struct sockaddr_in6 *a = (struct sockaddr_in6 *) addr;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16) port);
		a->sin6_addr = in6addr_loopback;
		*len = sizeof(*a);
		return true;
	}
	return false;
}

static int
server_connect(TimestampTz deadline, char *err, size_t errlen)
{
	struct sockaddr_storage addr;
	socklen_t	alen;
	int			fd;
	int			rc;

	if (qopt_server == NULL || qopt_server[0] == '\0')
	{
		snprintf(err, errlen, "qopt.server is not set");
		return -1;
	}
	memset(&addr, 0, sizeof(addr));
	if (qopt_server[0] == '/')
	{
		struct sockaddr_un *a = (struct sockaddr_un *) &addr;

		if (strlen(qopt_server) >= sizeof(a->sun_path))
		{
			snprintf(err, errlen, "socket path too long");
			return -1;
		}
		a->sun_family = AF_UNIX;
		strlcpy(a->sun_path, qopt_server, sizeof(a->sun_path));
		alen = sizeof(*a);
	}
	else if (!parse_tcp(qopt_server, &addr, &alen))
	{
		snprintf(err, errlen, "qopt.server \"%s\" is not a socket path or localhost:PORT", qopt_server);
		return -1;
	}
	fd = socket(addr.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
	{
		snprintf(err, errlen, "socket() failed: %s", strerror(errno));
		return -1;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK) < 0)
	{
		snprintf(err, errlen, "fcntl() failed: %s", strerror(errno));
		close(fd);
		return -1;
	}
	rc = connect(fd, (struct sockaddr *) &addr, alen);
	if (rc < 0 && errno == EINPROGRESS)
	{
		int			soerr = 0;
		socklen_t	sl = sizeof(soerr);

		if (!wait_for(fd, POLLOUT, deadline, err, errlen))
		{
			close(fd);
			return -1;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0)
		{
			snprintf(err, errlen, "cannot connect to %s: %s", qopt_server, strerror(soerr ? soerr : errno));
			close(fd);
			return -1;
		}
	}
	else if (rc < 0)
	{
		snprintf(err, errlen, "cannot connect to %s: %s", qopt_server, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* *closed (when not NULL) says that the peer had closed the connection. */
static bool
send_all(int fd, const char *buf, size_t len, TimestampTz deadline, bool *closed,
		 char *err, size_t errlen)
{
	size_t		off = 0;

	if (closed)
		*closed = false;

	while (off < len)
	{
		ssize_t		n = send(fd, buf + off, len - off, MSG_NOSIGNAL);

		if (n > 0)
		{
			off += n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		{
			if (!wait_for(fd, POLLOUT, deadline, err, errlen))
				return false;
			continue;
		}
		if (closed)
			*closed = n < 0 && (errno == EPIPE || errno == ECONNRESET);
		snprintf(err, errlen, "send failed: %s", n < 0 ? strerror(errno) : "closed");
		return false;
	}
	return true;
}

/*
 * The connection plan requests go over: opened at a session's first request
 * and kept, so that a request costs one send and one receive, not a connect
 * and a new server thread.  It is dropped after any failure (a late answer
 * must never be read as the next request's), and when qopt.server changes.
 */
static int	server_fd = -1;
static char server_fd_addr[MAXPGPATH];

static void
drop_connection(void)
{
	if (server_fd >= 0)
		close(server_fd);
	server_fd = -1;
}

/* A kept connection the server has closed (restarted, timed out) reads EOF. */
static bool
connection_stale(int fd)
{
	struct pollfd p;

	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	return poll(&p, 1, 0) != 0;	/* readable before a request: EOF or stray bytes */
}

/*
 * One request sent on fd and its answer line read, within the deadline.
 * *closed says that the server closed the connection (after an answer that
 * had no trailing newline, or before the answer).
 */
static bool
exchange(int fd, const char *request, StringInfo answer, TimestampTz deadline,
		 bool *closed, char *err, size_t errlen)
{
	char		buf[8192];

	if (!send_all(fd, request, strlen(request), deadline, closed, err, errlen))
		return false;
	for (;;)
	{
		ssize_t		n = recv(fd, buf, sizeof(buf), 0);

		if (n > 0)
		{
			char	   *nl = memchr(buf, '\n', n);

			appendBinaryStringInfo(answer, buf, nl ? nl - buf : n);
			if (nl)
				return true;
			if (answer->len > QOPT_MAX_ANSWER)
			{
				snprintf(err, errlen, "answer longer than %d bytes", QOPT_MAX_ANSWER);
				return false;
			}
			continue;
		}
		if (n == 0 || errno == ECONNRESET)
		{
			*closed = true;
			if (n == 0 && answer->len > 0)
				return true;	/* an answer without a trailing newline, then EOF */
			snprintf(err, errlen, "the server closed the connection without an answer");
			return false;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		{
			if (!wait_for(fd, POLLIN, deadline, err, errlen))
				return false;
			continue;
		}
		snprintf(err, errlen, "recv failed: %s", strerror(errno));
		return false;
	}
}

static bool
open_connection(TimestampTz deadline, char *err, size_t errlen)
{
	server_fd = server_connect(deadline, err, errlen);
	if (server_fd < 0)
		return false;
	strlcpy(server_fd_addr, qopt_server, sizeof(server_fd_addr));
	return true;
}

/*
 * One request, one line back (without its newline) into *answer.  A kept
 * connection that the server has closed (it ended it between two requests,
 * or restarted) is replaced: found before the request, or, when the close
 * races with it, by the request being answered with EOF, in which case it is
 * sent once more on a new connection.  A timeout or a broken answer is never
 * retried: the connection is dropped and the standard plan is used.
 */
static bool
ask_server(const char *request, StringInfo answer, char *err, size_t errlen)
{
	TimestampTz deadline = GetCurrentTimestamp() + (TimestampTz) qopt_timeout_ms * 1000;
	bool		kept;
	bool		closed;

	if (server_fd >= 0 &&
		(qopt_server == NULL || strcmp(server_fd_addr, qopt_server) != 0 ||
		 connection_stale(server_fd)))
		drop_connection();
	kept = server_fd >= 0;
	for (;;)
	{
		if (server_fd < 0 && !open_connection(deadline, err, errlen))
			return false;
		if (exchange(server_fd, request, answer, deadline, &closed, err, errlen))
		{
			if (closed)
				drop_connection();
			return true;
		}
		drop_connection();
		/* once more on a new connection, only after a kept one was found closed */
		if (!(kept && closed && answer->len == 0) || ms_left(deadline) <= 0)
			return false;
		kept = false;
		resetStringInfo(answer);
	}
}

/* Fire and forget: the held rewards on a connection of their own. */
static void
flush_rewards(void)
{
	StringInfoData req;
	char		err[256];
	TimestampTz deadline;
	int			fd;

	if (held_rewards == NULL || held_count == 0)
		return;
	last_rewards_sent = GetCurrentTimestamp();
	deadline = last_rewards_sent + (TimestampTz) qopt_timeout_ms * 1000;
	fd = server_connect(deadline, err, sizeof(err));
	if (fd >= 0)
	{
		initStringInfo(&req);
		appendStringInfoString(&req, "{\"op\": \"rewards\", \"items\": [");
		appendBinaryStringInfo(&req, held_rewards->data, held_rewards->len);
		appendStringInfoString(&req, "]}\n");
		(void) send_all(fd, req.data, req.len, deadline, NULL, err, sizeof(err));
		close(fd);
		pfree(req.data);
	}
	resetStringInfo(held_rewards);
	held_count = 0;
}

/*
 * The runtime of a plan made with an answer: held for the next plan request,
 * or sent now (see the header comment).
 */
static void
hold_reward(const char *key, double ms)
{
	TimestampTz now = GetCurrentTimestamp();

	if (held_rewards == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		held_rewards = makeStringInfo();
		MemoryContextSwitchTo(old);
	}
	if (held_count > 0)
		appendStringInfoChar(held_rewards, ',');
	appendStringInfoString(held_rewards, "{\"key\": ");
	escape_json(held_rewards, key);
	appendStringInfo(held_rewards, ", \"ms\": %.4f}", ms);
	held_count++;
	if (held_count >= qopt_reward_batch ||
		now - last_rewards_sent >= (TimestampTz) QOPT_REWARD_HOLD_MS * 1000)
		flush_rewards();
}

/* Backend exit: what is still held is sent. */
static void
qopt_exit(int code, Datum arg)
{
	flush_rewards();
	drop_connection();
}

static void
warn_once(const char *what)
{
	if (warned)
		return;
	warned = true;
	ereport(WARNING,
			(errmsg("pg_qopt: %s; using the standard planner", what),
			 errhint("Is the model server running (qopt-bench serve) at qopt.server = '%s'? "
					 "Later failures in this session are not reported.",
					 qopt_server ? qopt_server : "")));
}

static void
set_note(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(last_note, sizeof(last_note), fmt, ap);
	va_end(ap);
	have_note = true;
}


/* ------------------------------------------------------------------------
 * Which queries are asked
 * ------------------------------------------------------------------------
 */

static bool
extern_param_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, extern_param_walker, context, 0);
	return expression_tree_walker(node, extern_param_walker, context);
}

static bool
eligible_query(Query *parse, const char *query_string, int cursorOptions,
			   ParamListInfo boundParams)
{
	if (!qopt_enabled || qopt_mode == QOPT_MODE_OFF)
		return false;
	if (planner_depth != 0 || IsParallelWorker() || IsInParallelMode())
		return false;
	if (!(nesting == 0 || (explain_top && nesting == 1)))
		return false;
	if (query_string == NULL || boundParams != NULL)
		return false;
	if (parse->commandType != CMD_SELECT || parse->utilityStmt != NULL)
		return false;
	if (parse->rowMarks != NIL || parse->hasModifyingCTE)
		return false;
	if (cursorOptions & (CURSOR_OPT_SCROLL | CURSOR_OPT_HOLD))
		return false;
	if (extern_param_walker((Node *) parse, NULL))
		return false;
	return true;
}

static const char *
skip_space(const char *p)
{
	for (;;)
	{
		while (*p && isspace((unsigned char) *p))
			p++;
		if (p[0] == '-' && p[1] == '-')
		{
			while (*p && *p != '\n')
				p++;
			continue;
		}
		if (p[0] == '/' && p[1] == '*')
		{
			const char *e = strstr(p + 2, "*/");

			p = e ? e + 2 : p + strlen(p);
			continue;
		}
		return p;
	}
}

static bool
word_at(const char *p, const char *w)
{
	size_t		n = strlen(w);

	return pg_strncasecmp(p, w, n) == 0 && !(isalnum((unsigned char) p[n]) || p[n] == '_');
}

/* The query text after "EXPLAIN [(options)] [ANALYZE] [VERBOSE]", or NULL. */
static const char *
strip_explain(const char *s)
{
	const char *p = skip_space(s);

	if (!word_at(p, "explain"))
		return NULL;
	p = skip_space(p + 7);
	if (*p == '(')
	{
		int			depth = 0;

		for (; *p; p++)
		{
			if (*p == '\'')
			{
				p++;
				while (*p && *p != '\'')
					p++;
				if (!*p)
					return NULL;
			}
			else if (*p == '(')
				depth++;
			else if (*p == ')' && --depth == 0)
			{
				p++;
				break;
			}
		}
		if (depth != 0)
			return NULL;
		p = skip_space(p);
	}
	else
	{
		for (;;)
		{
			if (word_at(p, "analyze") || word_at(p, "analyse"))
				p = skip_space(p + 7);
			else if (word_at(p, "verbose"))
				p = skip_space(p + 7);
			else
				break;
		}
	}
	return p;
}

/* The text of the statement being planned (palloc'd), or NULL. */
static char *
statement_text(Query *parse, const char *query_string)
{
	int			loc;
	int			len;
	size_t		total = strlen(query_string);
	char	   *stmt;

	if (explain_top)
	{
		loc = explain_loc;
		len = explain_len;
	}
	else
	{
		loc = parse->stmt_location;
		len = parse->stmt_len;
	}
	if (loc < 0 || (size_t) loc > total)
	{
		loc = 0;
		len = 0;
	}
	if (len <= 0 || (size_t) (loc + len) > total)
		len = total - loc;
	stmt = pnstrdup(query_string + loc, len);
	if (explain_top)
	{
		const char *q = strip_explain(stmt);

		if (q == NULL || *q == '\0')
			return NULL;
		stmt = pstrdup(q);
	}
	/* trim surrounding white space */
	while (*stmt && isspace((unsigned char) *stmt))
		stmt++;
	len = strlen(stmt);
	while (len > 0 && isspace((unsigned char) stmt[len - 1]))
		stmt[--len] = '\0';
	return len > 0 ? stmt : NULL;
}


/* ------------------------------------------------------------------------
 * Planning with an answer
 * ------------------------------------------------------------------------
 */

static PlannedStmt *
next_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	if (prev_planner)
		return prev_planner(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

static char *
jsonb_string(Jsonb *jb, const char *key, bool *present)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&jb->root, key, strlen(key), NULL);

	*present = (v != NULL && v->type != jbvNull);
	if (!*present)
		return NULL;
	if (v->type != jbvString)
		ereport(ERROR, (errmsg("\"%s\" in the answer is not a string", key)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static bool
allowed_setting(const char *name)
{
	return strncmp(name, "enable_", 7) == 0 ||
		strcmp(name, "join_collapse_limit") == 0 ||
		strcmp(name, "from_collapse_limit") == 0 ||
		strcmp(name, "geqo") == 0;
}

/* Apply the arm's settings at the current GUC nest level; returns how many. */
static int
apply_arm(Jsonb *jb)
{
	JsonbValue *arm = getKeyJsonValueFromContainer(&jb->root, "arm", 3, NULL);
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = 0;

	if (arm == NULL || arm->type == jbvNull)
		return 0;
	if (arm->type != jbvBinary || !JsonContainerIsObject(arm->val.binary.data))
		ereport(ERROR, (errmsg("\"arm\" in the answer is not an object")));
	it = JsonbIteratorInit(arm->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		char	   *name;
		char	   *value;

		if (tok != WJB_KEY)
			continue;
		name = pnstrdup(k.val.string.val, k.val.string.len);
		tok = JsonbIteratorNext(&it, &v, true);
		if (tok != WJB_VALUE)
			ereport(ERROR, (errmsg("\"arm\" setting %s has no value", name)));
		if (!allowed_setting(name))
			ereport(ERROR, (errmsg("\"arm\" may set enable_*, join_collapse_limit, from_collapse_limit or geqo, not %s", name)));
		if (v.type == jbvString)
			value = pnstrdup(v.val.string.val, v.val.string.len);
		else if (v.type == jbvBool)
			value = pstrdup(v.val.boolean ? "on" : "off");
		else if (v.type == jbvNumeric)
			value = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
		else
			ereport(ERROR, (errmsg("\"arm\" setting %s has a value that is not a string, boolean or number", name)));
		(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, ERROR, false);
		n++;
	}
	return n;
}

/* Parse, analyse and rewrite the answer's SQL; check it against the original. */
static Query *
analyse_rewrite(const char *sql, Query *orig)
{
	List	   *raw = pg_parse_query(sql);
	RawStmt    *rs;
	Query	   *q;
	List	   *rewritten;
	ListCell   *lo;
	ListCell   *ln;
	int			no = 0;
	int			nn = 0;

	if (list_length(raw) != 1)
		ereport(ERROR, (errmsg("the rewritten SQL holds %d statements, not one", list_length(raw))));
	rs = linitial_node(RawStmt, raw);
	if (!IsA(rs->stmt, SelectStmt))
		ereport(ERROR, (errmsg("the rewritten SQL is not a SELECT")));
	q = parse_analyze_fixedparams(rs, sql, NULL, 0, NULL);
	rewritten = QueryRewrite(q);
	if (list_length(rewritten) != 1)
		ereport(ERROR, (errmsg("the rewritten SQL expands to %d queries", list_length(rewritten))));
	q = linitial_node(Query, rewritten);
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL || q->rowMarks != NIL ||
		q->hasModifyingCTE)
		ereport(ERROR, (errmsg("the rewritten SQL is not a plain SELECT")));

	foreach(lo, orig->targetList)
		if (!((TargetEntry *) lfirst(lo))->resjunk)
			no++;
	foreach(ln, q->targetList)
		if (!((TargetEntry *) lfirst(ln))->resjunk)
			nn++;
	if (no != nn)
		ereport(ERROR, (errmsg("the rewritten SQL returns %d columns, the query %d", nn, no)));

	/* pair the visible columns: same types, and the original's names */
	ln = list_head(q->targetList);
	foreach(lo, orig->targetList)
	{
		TargetEntry *to = (TargetEntry *) lfirst(lo);
		TargetEntry *tn;

		if (to->resjunk)
			continue;
		while (ln && ((TargetEntry *) lfirst(ln))->resjunk)
			ln = lnext(q->targetList, ln);
		Assert(ln != NULL);
		tn = (TargetEntry *) lfirst(ln);
		if (exprType((Node *) to->expr) != exprType((Node *) tn->expr))
			ereport(ERROR,
					(errmsg("column %d of the rewritten SQL has type %s, the query's has %s",
							to->resno, format_type_be(exprType((Node *) tn->expr)),
							format_type_be(exprType((Node *) to->expr)))));
		tn->resname = to->resname ? pstrdup(to->resname) : NULL;
		tn->resorigtbl = to->resorigtbl;
		tn->resorigcol = to->resorigcol;
		ln = lnext(q->targetList, ln);
	}
	q->canSetTag = orig->canSetTag;
	q->queryId = orig->queryId;
	q->stmt_location = orig->stmt_location;
	q->stmt_len = orig->stmt_len;
	return q;
}

/* Plan with the answer; NULL means: plan the original with the standard planner. */
static PlannedStmt *
plan_answer(Query *parse, const char *line, const char *query_string, int cursorOptions,
			ParamListInfo boundParams, const char *what)
{
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(line)));
	bool		present;
	char	   *errtext;
	char	   *sql;
	char	   *key;
	char	   *note;
	int			nestlevel;
	volatile int nset = 0;
	PlannedStmt *volatile result = NULL;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR, (errmsg("the answer is not a JSON object")));
	errtext = jsonb_string(jb, "error", &present);
	if (present)
		ereport(ERROR, (errmsg("the model server says: %s", errtext)));
	sql = jsonb_string(jb, "sql", &present);
	key = jsonb_string(jb, "key", &present);
	note = jsonb_string(jb, "note", &present);
	if (qopt_mode != QOPT_MODE_REWRITE)
		sql = NULL;

	nestlevel = NewGUCNestLevel();
	PG_TRY();
	{
		Query	   *q = NULL;

		nset = apply_arm(jb);
		if (sql != NULL && sql[0] != '\0')
			q = analyse_rewrite(sql, parse);
		else if (nset > 0 || (key != NULL && key[0] != '\0'))
			q = copyObject(parse); /* an arm, or the standard plan measured for the model */
		if (q != NULL)
			result = next_planner(q, sql ? sql : query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		AtEOXact_GUC(false, nestlevel);
	}
	PG_END_TRY();

	if (result != NULL)
	{
		result->queryId = parse->queryId;
		result->stmt_location = parse->stmt_location;
		result->stmt_len = parse->stmt_len;
		pending_plan = result;
		strlcpy(pending_key, key ? key : "", sizeof(pending_key));
		set_note("%s: %s (%s)",
				 sql ? "rewritten" : (nset > 0 ? "planner arm" : "standard plan, measured"),
				 note ? note : "", what);
	}
	else
		set_note("standard plan: the model chose no change%s%s (%s)",
				 note ? ": " : "", note ? note : "", what);
	return result;
}

static PlannedStmt *
qopt_plan(Query *parse, const char *stmt, const char *query_string, int cursorOptions,
		  ParamListInfo boundParams)
{
	StringInfoData req;
	StringInfoData answer;
	char		err[512];
	char		what[128];
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	PlannedStmt *volatile result = NULL;
	instr_time	t0;
	instr_time	t1;
	const char *db = get_database_name(MyDatabaseId);

	initStringInfo(&req);
	appendStringInfoString(&req, "{\"op\": \"plan\", \"sql\": ");
	escape_json(&req, stmt);
	appendStringInfoString(&req, ", \"search_path\": ");
	escape_json(&req, GetConfigOption("search_path", false, false));
	appendStringInfoString(&req, ", \"database\": ");
	escape_json(&req, db ? db : "");
	appendStringInfo(&req, ", \"mode\": \"%s\"", qopt_mode == QOPT_MODE_ARMS ? "arms" : "rewrite");
	if (held_count > 0)
	{
		/* the held rewards ride along (lost with the request if it fails: fire and forget) */
		appendStringInfoString(&req, ", \"rewards\": [");
		appendBinaryStringInfo(&req, held_rewards->data, held_rewards->len);
		appendStringInfoChar(&req, ']');
		resetStringInfo(held_rewards);
		held_count = 0;
		last_rewards_sent = GetCurrentTimestamp();
	}
	appendStringInfoString(&req, "}\n");

	initStringInfo(&answer);
	INSTR_TIME_SET_CURRENT(t0);
	if (!ask_server(req.data, &answer, err, sizeof(err)))
	{
		set_note("standard plan: %s", err);
		warn_once(err);
		return NULL;
	}
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	snprintf(what, sizeof(what), "answered in %.3f ms", INSTR_TIME_GET_MILLISEC(t1));

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		result = plan_answer(parse, answer.data, query_string, cursorOptions, boundParams, what);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN ||
			edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
			ReThrowError(edata);
		pending_plan = NULL;
		snprintf(err, sizeof(err), "the answer was not used: %s", edata->message);
		set_note("standard plan: %s", err);
		warn_once(err);
		FreeErrorData(edata);
		result = NULL;
	}
	PG_END_TRY();
	return result;
}


/* ------------------------------------------------------------------------
 * Hooks
 * ------------------------------------------------------------------------
 */

static PlannedStmt *
qopt_planner(Query *parse, const char *query_string, int cursorOptions,
			 ParamListInfo boundParams)
{
	PlannedStmt *volatile result = NULL;
	bool		eligible = eligible_query(parse, query_string, cursorOptions, boundParams);

	if (planner_depth == 0)
	{
		pending_plan = NULL;
		if (!explain_top)
			have_note = false;
	}
	planner_depth++;
	PG_TRY();
	{
		char	   *stmt = eligible ? statement_text(parse, query_string) : NULL;

		if (stmt != NULL)
			result = qopt_plan(parse, stmt, query_string, cursorOptions, boundParams);
		if (result == NULL)
			result = next_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		planner_depth--;
	}
	PG_END_TRY();
	return result;
}

static void
qopt_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (pending_plan != NULL && queryDesc->plannedstmt == pending_plan)
	{
		pending_plan = NULL;
		if (qopt_send_rewards && !(eflags & EXEC_FLAG_EXPLAIN_ONLY) && pending_key[0])
		{
			timed_desc = queryDesc;
			strlcpy(timed_key, pending_key, sizeof(timed_key));
			timed_start = GetCurrentTimestamp();
		}
	}
}

static void
qopt_ExecutorRun(QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once)
{
	nesting++;
	PG_TRY();
	{
		if (prev_ExecutorRun)
			prev_ExecutorRun(queryDesc, direction, count, execute_once);
		else
			standard_ExecutorRun(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
}

static void
qopt_ExecutorFinish(QueryDesc *queryDesc)
{
	nesting++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		nesting--;
	}
	PG_END_TRY();
}

static void
qopt_ExecutorEnd(QueryDesc *queryDesc)
{
	if (timed_desc != NULL && queryDesc == timed_desc)
	{
		double		ms = (double) (GetCurrentTimestamp() - timed_start) / 1000.0;

		timed_desc = NULL;
		hold_reward(timed_key, ms);
	}
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

static void
qopt_ProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (nesting == 0 && pstmt->utilityStmt && IsA(pstmt->utilityStmt, ExplainStmt))
	{
		explain_pending = true;
		explain_loc = pstmt->stmt_location;
		explain_len = pstmt->stmt_len;
	}
	nesting++;
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
									queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		nesting--;
		explain_pending = false;
	}
	PG_END_TRY();
}

/* Reopen the just-closed "Query" group of a JSON or YAML EXPLAIN to add a line. */
static void
explain_add_note(ExplainState *es, const char *note)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("Query Optimizer", note, es);
		return;
	}
	if (es->format == EXPLAIN_FORMAT_JSON)
	{
		int			i = es->str->len - 1;

		while (i >= 0 && es->str->data[i] != '}')
			i--;
		while (i >= 0 && es->str->data[i] != '\n')
			i--;
		if (i < 0)
			return;
		es->str->len = i;
		es->str->data[i] = '\0';
	}
	else if (es->format != EXPLAIN_FORMAT_YAML)
		return;					/* XML: no note */
	es->indent++;
	es->grouping_stack = lcons_int(1, es->grouping_stack);
	ExplainPropertyText("Query Optimizer", note, es);
	ExplainCloseGroup("Query", NULL, true, es);
}

static void
qopt_ExplainOneQuery(Query *query, int cursorOptions, IntoClause *into, ExplainState *es,
					 const char *queryString, ParamListInfo params, QueryEnvironment *queryEnv)
{
	bool		top = explain_pending && into == NULL && nesting == 1;
	char	   *note = NULL;

	explain_pending = false;
	have_note = false;
	if (prev_ExplainOneQuery)
	{
		explain_top = top;
		PG_TRY();
		{
			prev_ExplainOneQuery(query, cursorOptions, into, es, queryString, params, queryEnv);
		}
		PG_FINALLY();
		{
			explain_top = false;
		}
		PG_END_TRY();
		note = have_note ? pstrdup(last_note) : NULL;
	}
	else
	{
		PlannedStmt *plan = NULL;
		instr_time	planstart;
		instr_time	planduration;
		BufferUsage bufusage_start;
		BufferUsage bufusage;

		if (es->buffers)
			bufusage_start = pgBufferUsage;
		INSTR_TIME_SET_CURRENT(planstart);
		explain_top = top;
		PG_TRY();
		{
			plan = pg_plan_query(query, queryString, cursorOptions, params);
		}
		PG_FINALLY();
		{
			explain_top = false;
		}
		PG_END_TRY();
		INSTR_TIME_SET_CURRENT(planduration);
		INSTR_TIME_SUBTRACT(planduration, planstart);
		if (es->buffers)
		{
			memset(&bufusage, 0, sizeof(BufferUsage));
			BufferUsageAccumDiff(&bufusage, &pgBufferUsage, &bufusage_start);
		}
		note = have_note ? pstrdup(last_note) : NULL;
		ExplainOnePlan(plan, into, es, queryString, params, queryEnv,
					   &planduration, (es->buffers ? &bufusage : NULL));
	}
	if (note != NULL)
		explain_add_note(es, note);
}


/* ------------------------------------------------------------------------
 * Settings and module load
 * ------------------------------------------------------------------------
 */

/* Nothing of a finished transaction is timed or matched later (errors skip ExecutorEnd). */
static void
qopt_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		pending_plan = NULL;
		timed_desc = NULL;
	}
}

static bool
check_server(char **newval, void **extra, GucSource source)
{
	const char *s = *newval;
	struct sockaddr_storage addr;
	socklen_t	alen;

	if (s == NULL || s[0] == '\0')
		return true;
	if (s[0] == '/')
	{
		if (strlen(s) >= sizeof(((struct sockaddr_un *) 0)->sun_path))
		{
			GUC_check_errdetail("The socket path is longer than a Unix socket path may be.");
			return false;
		}
		return true;
	}
	if (parse_tcp(s, &addr, &alen))
		return true;
	GUC_check_errdetail("qopt.server must be an absolute Unix socket path, or localhost:PORT, "
						"127.0.0.1:PORT or [::1]:PORT (the model server is reached on this machine only).");
	return false;
}

void
_PG_init(void)
{
	DefineCustomBoolVariable("qopt.enabled",
							 "Ask the model server how to plan top-level SELECTs.",
							 NULL, &qopt_enabled, false, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("qopt.server",
							   "The model server: a Unix socket path, or localhost:PORT.",
							   NULL, &qopt_server, "", PGC_SUSET, 0, check_server, NULL, NULL);
	DefineCustomIntVariable("qopt.timeout_ms",
							"How long to wait for the model server's answer before planning as usual.",
							NULL, &qopt_timeout_ms, 50, 1, 60000, PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("qopt.mode",
							 "rewrite: plan the rewritten SQL (with its planner arm); "
							 "arms: only the planner arm; off: never ask.",
							 NULL, &qopt_mode, QOPT_MODE_REWRITE, mode_options, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("qopt.send_rewards",
							 "Send the runtime of plans made with an answer back to the model server.",
							 NULL, &qopt_send_rewards, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("qopt.reward_batch",
							"Rewards held for the next plan request at most; more are sent at once (1: each at once).",
							NULL, &qopt_reward_batch, 32, 1, 1000, PGC_USERSET, 0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("qopt");
	RegisterXactCallback(qopt_xact_callback, NULL);
	before_shmem_exit(qopt_exit, (Datum) 0);

	prev_planner = planner_hook;
	planner_hook = qopt_planner;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = qopt_ExecutorStart;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = qopt_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = qopt_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = qopt_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = qopt_ProcessUtility;
	prev_ExplainOneQuery = ExplainOneQuery_hook;
	ExplainOneQuery_hook = qopt_ExplainOneQuery;
}
