/* cmd_schema.c: `temper schema`: prints the result record's fields, one Markdown table per record,
 * as docs/result.md holds them; both come from the X-macros of include/temper/result.h. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "temper/result.h"

int cmd_schema(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: temper schema\n\nPrints the fields of an evaluation result (`temper eval --json`), version %d:\n"
               "one Markdown table per record, as docs/result.md lists them.\n",
               TEMPER_RESULT_SCHEMA_VERSION);
        return CLI_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "%s: takes no arguments (see --help)\n", argv[0]);
        return CLI_USAGE;
    }
    temper_result_schema_markdown(stdout);
    return CLI_OK;
}
