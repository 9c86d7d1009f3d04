#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct point {
    int x;
};

typedef struct point point_t;

/* Parses arguments. */
static int *parse_args(int argc, char **argv) {
    return 0;
}
