/* agent_schema.c: the agent's tables in the store (docs/agent.md, docs/store.md), which the agent
 * owns, registered with the store as schema step 5 (store_module.h); agent_store.c holds their
 * reads and writes. Part of libtemper with the store: one schema version counts every owner's
 * steps, so every program that opens a store makes these tables. */
#include "../store/store_module.h"

/* Version 5: the agent's sessions, prompts, model calls (every HTTP exchange, with its tokens and
 * latency) and candidates with their lineage (docs/agent.md, docs/store.md). */
static const char schema_v5[] =
    "CREATE TABLE IF NOT EXISTS agent_sessions ("
    "  id INTEGER PRIMARY KEY, task TEXT NOT NULL, device TEXT, api TEXT, endpoint TEXT, model TEXT,"
    "  settings TEXT NOT NULL, replay_of INTEGER, best_eval_id INTEGER, summary TEXT,"
    "  started_at TEXT NOT NULL, finished_at TEXT);"
    "CREATE TABLE IF NOT EXISTS agent_prompts ("
    "  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL, role TEXT NOT NULL, messages TEXT NOT NULL,"
    "  created_at TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS agent_calls ("
    "  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL, prompt_id INTEGER, attempt INTEGER NOT NULL,"
    "  url TEXT, request TEXT NOT NULL, status INTEGER, reply TEXT, content TEXT, reasoning TEXT,"
    "  finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_ms REAL, error TEXT,"
    "  created_at TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS agent_candidates ("
    "  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL, prompt_id INTEGER, call_id INTEGER,"
    "  role TEXT NOT NULL, parent_eval_id INTEGER, eval_id INTEGER, island INTEGER, features TEXT,"
    "  source TEXT, outcome TEXT NOT NULL, median_ms REAL, note TEXT, created_at TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS agent_calls_session ON agent_calls(session_id, id);"
    "CREATE INDEX IF NOT EXISTS agent_candidates_session ON agent_candidates(session_id, id);";

static const struct store_step agent_steps[] = {
    {5, "the agent's sessions, prompts, calls and candidates", schema_v5, NULL, 1},
};

const struct store_owner agent_store_owner = {"agent", agent_steps, sizeof(agent_steps) / sizeof(agent_steps[0])};
