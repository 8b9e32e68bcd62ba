/* Unit test of the launcher rank variables (config.h, ncg_launch_ranks_parse): each launcher's
 * variables alone, their precedence when several are set, and values that are not ranks. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "config.h"

struct env {
    const char *kv[16][2];
};

static const char *get(const char *name, void *arg)
{
    const struct env *e = arg;
    for (int i = 0; i < 16 && e->kv[i][0]; i++)
        if (!strcmp(e->kv[i][0], name))
            return e->kv[i][1];
    return NULL;
}

static int fails;

static void check(const char *what, struct env e, int g, int l, int w, const char *gvar,
                  const char *lvar)
{
    struct ncg_launch_ranks r;
    ncg_launch_ranks_parse(&r, get, &e);
    if (r.global != g || r.local != l || r.world != w || strcmp(r.global_var, gvar) ||
        strcmp(r.local_var, lvar)) {
        printf("FAIL %s: got global %d (%s) local %d (%s) world %d, want %d (%s) %d (%s) %d\n",
               what, r.global, r.global_var, r.local, r.local_var, r.world, g, gvar, l, lvar, w);
        fails++;
    } else {
        printf("ok %s\n", what);
    }
}

static void tree(const char *what, struct env e, int rc, uint32_t node, uint32_t nnodes)
{
    struct ncg_launch_ranks r;
    uint32_t n = 0, nn = 0;
    ncg_launch_ranks_parse(&r, get, &e);
    int got = ncg_tree_node(&r, &n, &nn);
    if (got != rc || (rc == 0 && (n != node || nn != nnodes))) {
        printf("FAIL tree %s: got %d node %u of %u, want %d node %u of %u\n", what, got, n, nn, rc,
               node, nnodes);
        fails++;
    } else {
        printf("ok tree %s\n", what);
    }
}

int main(void)
{
    check("none", (struct env){{{0}}}, -1, -1, -1, "", "");
    check("torchrun", (struct env){{{"RANK", "7"}, {"LOCAL_RANK", "3"}, {"WORLD_SIZE", "16"}}}, 7,
          3, 16, "RANK", "LOCAL_RANK");
    check("slurm",
          (struct env){{{"SLURM_PROCID", "12"}, {"SLURM_LOCALID", "4"}, {"SLURM_NTASKS", "32"}}},
          12, 4, 32, "SLURM_PROCID", "SLURM_LOCALID");
    check("open mpi",
          (struct env){{{"OMPI_COMM_WORLD_RANK", "5"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                        {"OMPI_COMM_WORLD_SIZE", "8"},
                        {"PMIX_RANK", "5"}}},
          5, 1, 8, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
    check("mpich hydra",
          (struct env){{{"PMI_RANK", "9"}, {"MPI_LOCALRANKID", "2"}, {"PMI_SIZE", "10"}}}, 9, 2, 10,
          "PMI_RANK", "MPI_LOCALRANKID");
    check("pmix alone", (struct env){{{"PMIX_RANK", "3"}}}, 3, -1, -1, "PMIX_RANK", "");
    /* torchrun inside srun: RANK (the worker) wins over SLURM_PROCID (the torchrun agent) */
    check("torchrun under srun",
          (struct env){{{"SLURM_PROCID", "1"},
                        {"SLURM_LOCALID", "0"},
                        {"SLURM_NTASKS", "2"},
                        {"RANK", "13"},
                        {"LOCAL_RANK", "5"},
                        {"WORLD_SIZE", "16"}}},
          13, 5, 16, "RANK", "LOCAL_RANK");
    /* mpirun inside an allocation: Open MPI's own variables win over Slurm's */
    check("mpirun under slurm",
          (struct env){{{"SLURM_PROCID", "0"},
                        {"SLURM_LOCALID", "0"},
                        {"OMPI_COMM_WORLD_RANK", "6"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}},
          6, 2, -1, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
    check("srun --mpi=pmix",
          (struct env){{{"SLURM_PROCID", "4"}, {"PMIX_RANK", "4"}, {"SLURM_LOCALID", "0"}}}, 4, 0,
          -1, "PMIX_RANK", "SLURM_LOCALID");
    /* values that are not ranks are passed over, to the next variable */
    check("bad values",
          (struct env){{{"RANK", ""},
                        {"OMPI_COMM_WORLD_RANK", "-1"},
                        {"PMIX_RANK", "x3"},
                        {"PMI_RANK", "99999999999"},
                        {"SLURM_PROCID", "2"},
                        {"LOCAL_RANK", "1 "},
                        {"SLURM_LOCALID", "0"}}},
          2, 0, -1, "SLURM_PROCID", "SLURM_LOCALID");
    /* the relay tree's node (ncg_tree_node): blocks of LOCAL_WORLD_SIZE consecutive ranks */
    tree(
        "torchrun 4x4, rank 13",
        (struct env){
            {{"RANK", "13"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "16"}, {"LOCAL_WORLD_SIZE", "4"}}},
        0, 3, 4);
    tree("open mpi 3 nodes of 8, 20 ranks",
         (struct env){{{"OMPI_COMM_WORLD_RANK", "17"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "20"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}},
         0, 2, 3);
    tree("no local world size",
         (struct env){{{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}}, -1, 0, 0);
    tree("local rank past the local world",
         (struct env){
             {{"RANK", "5"}, {"LOCAL_RANK", "4"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}}},
         -1, 0, 0);
    tree("not block placement",
         (struct env){
             {{"RANK", "5"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}}},
         -1, 0, 0);
    tree("rank past the world",
         (struct env){
             {{"RANK", "9"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}}},
         -1, 0, 0);
    printf("%s\n", fails ? "ranks_test: FAILED" : "ranks_test: ok");
    return fails != 0;
}
