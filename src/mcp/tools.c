/* tools.c: the tools `temper mcp` offers: their names, descriptions and input and output schemas
 * (what tools/list shows and what a call's arguments are checked against), and their handlers
 * (tools_tasks.c: the tools that run no kernel; tools_eval.c: those that do). */
#include <string.h>

#include "mcp.h"

/* The source's limit, TEMPER_SOURCE_MAX (1 MiB), in the schemas' words. */
#define SOURCE_SCHEMA                                                                                        \
    "\"source\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 1048576, \"description\": "         \
    "\"The candidate kernel's text: CUDA, OpenCL or Triton with @temper directives (task, launch, param, "   \
    "require; docs/candidate.md). At most 1 MiB (1048576 bytes).\"}, "                                       \
    "\"lang\": {\"type\": \"string\", \"enum\": [\"cuda\", \"opencl\", \"triton\"], "                        \
    "\"description\": \"The source's language.\"}"

#define TASK_NAME_SCHEMA                                                                                     \
    "\"task\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 63, \"description\": \"A task's name, "  \
    "as list_tasks gives it (softmax, sgemm, ...).\"}"

#define RESULT_SCHEMA                                                                                        \
    "{\"type\": \"object\", \"description\": \"The result record of `temper eval --json` (docs/result.md): "  \
    "verdict, message, checks (each with its shape and first mismatch), timings (median_ms, speedup, "         \
    "roofline_share, bound), compile_log, store_id.\", \"properties\": {"                                     \
    "\"verdict\": {\"type\": \"string\", \"enum\": [\"correct\", \"incorrect\", \"compile_error\", "           \
    "\"runtime_error\", \"timeout\", \"invalid\"]}, \"message\": {\"type\": \"string\"}, "                     \
    "\"task\": {\"type\": \"string\"}, \"checks\": {\"type\": \"array\"}, \"timings\": {\"type\": \"array\"}, " \
    "\"compile_log\": {\"type\": [\"string\", \"null\"]}, \"store_id\": {\"type\": [\"integer\", \"null\"]}}, " \
    "\"required\": [\"verdict\", \"message\"]}"

static const struct mcp_tool tools[] = {
    {"list_tasks", "List the benchmark tasks",
     "The tasks temper can judge kernels against, by level: name, summary, FLOP and byte models, and the "
     "candidate files in each task's folder.",
     "{\"type\": \"object\", \"properties\": {}, \"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"tasks\": {\"type\": \"array\", \"items\": {\"type\": \"object\", "
     "\"properties\": {\"name\": {\"type\": \"string\"}, \"level\": {\"type\": \"integer\"}, \"summary\": "
     "{\"type\": \"string\"}, \"flops\": {\"type\": \"string\"}, \"bytes\": {\"type\": \"string\"}, \"folder\": "
     "{\"type\": \"string\"}, \"candidates\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}, "
     "\"required\": [\"name\", \"level\", \"summary\"]}}}, \"required\": [\"tasks\"]}",
     1, mcp_tool_list_tasks},
    {"show_task", "Describe a task",
     "A task's kernel arguments (in kernel order, with roles, types and shapes), size expressions, check and "
     "bench shapes, tolerance, FLOP and byte models, its C reference and its baselines' sources: what a "
     "candidate kernel for it must compute, and how it is launched.",
     "{\"type\": \"object\", \"properties\": {" TASK_NAME_SCHEMA "}, \"required\": [\"task\"], "
     "\"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"level\": {\"type\": "
     "\"integer\"}, \"summary\": {\"type\": \"string\"}, \"arguments\": {\"type\": \"array\"}, \"check_shapes\": "
     "{\"type\": \"array\"}, \"reference_source\": {\"type\": [\"string\", \"null\"]}, "
     "\"baseline_sources\": {\"type\": \"object\"}}, \"required\": [\"name\", \"arguments\"]}",
     1, mcp_tool_show_task},
    {"evaluate", "Evaluate a kernel",
     "Checks a candidate kernel against its task's C reference on every check shape with a public and a "
     "secret seed, against the baseline at the bench shapes, and times it (unless timing is false). Returns "
     "the result record; a kernel that is not correct is an error result whose text gives the verdict, the "
     "failing shape and element, and the compile log, so that it can be corrected.",
     "{\"type\": \"object\", \"properties\": {" SOURCE_SCHEMA ", \"knobs\": {\"type\": \"object\", "
     "\"additionalProperties\": {\"type\": [\"string\", \"integer\", \"number\"]}, \"description\": \"Values "
     "for the candidate's @temper param knobs, NAME: value; unset knobs take their first value.\"}, "
     "\"timing\": {\"type\": \"boolean\", \"default\": true, \"description\": \"false: correctness only "
     "(faster).\"}, \"device\": {\"type\": \"string\", \"maxLength\": 63, \"description\": \"cuda[:N] or "
     "opencl[:N]; the server serves one device (its --device, else the first call's, else the default).\"}}, "
     "\"required\": [\"source\", \"lang\"], \"additionalProperties\": false}",
     RESULT_SCHEMA, 0, mcp_tool_evaluate},
    {"tune", "Tune a kernel's knobs",
     "Searches a candidate's knobs (its @temper param lines) and the compiler's controls for the fastest "
     "configuration that passes every check, re-times the best few in full, and returns the summary with the "
     "best configuration and the kernel with those knobs fixed. Sends notifications/progress per evaluation "
     "when the request has a progressToken; notifications/cancelled stops it (what it evaluated stays in "
     "the store and is not run again). Defaults: 20 evaluations or 240 s, whichever ends first.",
     "{\"type\": \"object\", \"properties\": {" SOURCE_SCHEMA ", \"budget\": {\"type\": \"integer\", "
     "\"minimum\": 1, \"maximum\": 1000, \"default\": 20, \"description\": \"Evaluations at most.\"}, "
     "\"time_s\": {\"type\": \"number\", \"minimum\": 1, \"maximum\": 86400, \"default\": 240, \"description\": "
     "\"Seconds at most (the screening stops; the best few are then re-timed).\"}, \"strategy\": {\"type\": "
     "\"string\", \"description\": \"The search strategy.\"}, \"compiler_knobs\": {\"type\": \"boolean\", "
     "\"default\": true, \"description\": \"Search the compiler's controls too.\"}, \"retime\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"maximum\": 32, \"default\": 3, \"description\": \"How many of the best "
     "to re-time in full.\"}, \"screen_budget_s\": {\"type\": \"number\", \"minimum\": 0.01, \"maximum\": 60, "
     "\"default\": 0.3, \"description\": \"Timing budget of a screening evaluation per bench shape.\"}, "
     "\"full_budget_s\": {\"type\": \"number\", \"minimum\": 0.01, \"maximum\": 60, \"default\": 2, "
     "\"description\": \"Timing budget of a re-timing per bench shape.\"}}, \"required\": [\"source\", "
     "\"lang\"], \"additionalProperties\": false}",
     "{\"type\": \"object\", \"description\": \"The tune's summary, as `temper tune --json` prints it, with "
     "best_source.\", \"properties\": {\"best\": {\"type\": [\"object\", \"null\"]}, \"evaluations\": {\"type\": "
     "\"integer\"}, \"interrupted\": {\"type\": \"boolean\"}, \"best_source\": {\"type\": [\"string\", "
     "\"null\"]}}, \"required\": [\"best\", \"evaluations\"]}",
     0, mcp_tool_tune},
    {"profile", "Profile a kernel",
     "Evaluates a kernel and says where its time goes. CUDA: Nsight Compute's metrics (duration, DRAM "
     "throughput, occupancy, registers, local memory) for a correct kernel, and the bottleneck. OpenCL: "
     "temper reads no hardware counters there; the timing, the roofline share and which ceiling bounds it.",
     "{\"type\": \"object\", \"properties\": {" SOURCE_SCHEMA "}, \"required\": [\"source\", \"lang\"], "
     "\"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"verdict\": {\"type\": \"string\"}, \"backend\": {\"type\": "
     "\"string\"}, \"counters\": {\"type\": \"string\", \"enum\": [\"nsight_compute\", \"none\"]}, \"metrics\": "
     "{\"type\": [\"object\", \"array\", \"null\"]}, \"bottleneck\": {\"type\": \"string\"}, \"median_ms\": "
     "{\"type\": [\"number\", \"null\"]}, \"roofline_share\": {\"type\": [\"number\", \"null\"]}, \"bound\": "
     "{\"type\": [\"string\", \"null\"]}, \"note\": {\"type\": \"string\"}, \"result\": {\"type\": \"object\"}}, "
     "\"required\": [\"verdict\", \"backend\", \"counters\", \"bottleneck\"]}",
     0, mcp_tool_profile},
    {"best_kernel", "The best kernel known",
     "The fastest correct, timed kernel the store holds for a task (judged against the task's current "
     "content), on a device or any: its result record and its source.",
     "{\"type\": \"object\", \"properties\": {" TASK_NAME_SCHEMA ", \"device\": {\"type\": \"string\", "
     "\"maxLength\": 63, \"description\": \"cuda[:N] or opencl[:N]; omitted: any device.\"}}, \"required\": "
     "[\"task\"], \"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"task\": {\"type\": \"string\"}, \"result\": {\"type\": "
     "\"object\"}, \"source\": {\"type\": \"string\"}}, \"required\": [\"task\", \"result\", \"source\"]}",
     1, mcp_tool_best_kernel},
    {"history", "Past evaluations of a task",
     "The store's past evaluations, tune runs and benches of a task, newest first: each evaluation's "
     "verdict, median time, spread, speedup over the baseline, roofline share, parent and origin (the "
     "operator or client that made it), so an agent can see what was tried and what worked.",
     "{\"type\": \"object\", \"properties\": {" TASK_NAME_SCHEMA ", \"device\": {\"type\": \"string\", "
     "\"maxLength\": 255, \"description\": \"A device id (cuda:0), a device key or a backend (cuda, opencl); "
     "omitted: every device.\"}, \"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000, "
     "\"default\": 50, \"description\": \"Rows at most.\"}}, \"required\": [\"task\"], "
     "\"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"task\": {\"type\": \"string\"}, \"history\": {\"type\": "
     "\"array\", \"items\": {\"type\": \"object\"}}}, \"required\": [\"task\", \"history\"]}",
     1, mcp_tool_history},
    {"search_knowledge", "Search the kernel knowledge base",
     "Full-text search over temper's optimisation guides (coalescing, vector loads, reductions, tiling, "
     "tensor cores, Hopper's TMA and wgmma, OpenCL on CPUs) and the store's best kernels, one per task and "
     "device: what `temper knowledge search` shows and the agent's prompts retrieve.",
     "{\"type\": \"object\", \"properties\": {\"query\": {\"type\": \"string\", \"minLength\": 1, "
     "\"maxLength\": 1000, \"description\": \"Free text; any of its words match, stemmed.\"}, \"task\": "
     "{\"type\": \"string\", \"pattern\": \"^[a-z0-9_]{1,63}$\", \"description\": \"A task whose best kernels "
     "rank first.\"}, \"lang\": {\"type\": \"string\", \"enum\": [\"cuda\", \"opencl\", \"triton\"], \"description\": "
     "\"Only kernels in this language.\"}, \"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": "
     "50, \"default\": 5, \"description\": \"Hits at most.\"}}, \"required\": [\"query\"], "
     "\"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"query\": {\"type\": \"string\"}, \"hits\": {\"type\": "
     "\"array\", \"items\": {\"type\": \"object\", \"properties\": {\"kind\": {\"type\": \"string\", "
     "\"enum\": [\"guide\", \"kernel\"]}, \"title\": {\"type\": \"string\"}, \"ref\": {\"type\": "
     "\"string\"}, \"text\": {\"type\": \"string\"}}, \"required\": [\"kind\", \"title\", \"text\"]}}}, "
     "\"required\": [\"query\", \"hits\"]}",
     1, mcp_tool_search_knowledge},
};

const struct mcp_tool *mcp_tools(size_t *n)
{
    *n = sizeof(tools) / sizeof(tools[0]);
    return tools;
}

const struct mcp_tool *mcp_tool_find(const char *name)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (!strcmp(tools[i].name, name))
            return &tools[i];
    return NULL;
}

json_t *mcp_tool_input_schema(const struct mcp_tool *tool)
{
    json_t *schema = json_loads(tool->input_schema, 0, NULL);
    json_t *strategy = json_object_get(json_object_get(schema, "properties"), "strategy");
    if (strategy) { /* the strategies this build has, the first the default */
        json_t *names = json_array();
        for (int i = 0; temper_strategies()[i]; i++)
            json_array_append_new(names, json_string(temper_strategies()[i]->name));
        json_object_set_new(strategy, "enum", names);
        json_object_set_new(strategy, "default", json_string(temper_strategies()[0]->name));
    }
    return schema;
}
