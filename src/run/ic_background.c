#include "ic_background.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "ic_error.h"

struct ic_background {
    struct ic_pool *pool;     /* the discovering pool */
    struct ic_pool *spun_off; /* the one the thread runs */
    pthread_t thread;
    const struct ic_case *cases;
    size_t count;
    ic_result_fn on_result;
    void *context;
    _Atomic size_t finished; /* results delivered */
    _Atomic bool over;       /* ic_pool_run has returned */
};

static void ic_background_result(void *context, size_t index, const struct ic_result *res)
{
    struct ic_background *bg = context;
    bg->on_result(bg->context, index, res);
    atomic_fetch_add(&bg->finished, 1);
}

static void *ic_background_main(void *context)
{
    struct ic_background *bg = context;
    (void)ic_pool_run(bg->spun_off, bg->cases, bg->count, ic_background_result, bg);
    atomic_store(&bg->over, true);
    return NULL;
}

int ic_background_start(struct ic_pool *pool, struct ic_pool *spun_off, const struct ic_case *cases,
                        size_t count, ic_result_fn on_result, void *context,
                        struct ic_background **ret)
{
    struct ic_background *bg = calloc(1, sizeof(*bg));
    if (!bg) {
        ic_pool_absorb(pool, spun_off);
        return IC_ENOMEM;
    }
    *bg = (struct ic_background){.pool = pool,
                                 .spun_off = spun_off,
                                 .cases = cases,
                                 .count = count,
                                 .on_result = on_result,
                                 .context = context};
    atomic_init(&bg->finished, 0);
    atomic_init(&bg->over, false);
    /* The thread starts with every signal blocked, and the main thread's mask is put back. */
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    int started = pthread_create(&bg->thread, NULL, ic_background_main, bg);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (started != 0) {
        ic_pool_absorb(pool, bg->spun_off);
        free(bg);
        return IC_ENOMEM;
    }
    *ret = bg;
    return 0;
}

size_t ic_background_pending(const struct ic_background *bg)
{
    return bg->count - atomic_load(&bg->finished);
}

bool ic_background_running(const struct ic_background *bg)
{
    return !atomic_load(&bg->over);
}

void ic_background_stop(struct ic_background *bg, double grace_s)
{
    if (!bg)
        return;
    ic_pool_end(bg->spun_off, false);
    struct timespec pause = {0, 200 * 1000}, now, start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!atomic_load(&bg->over)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
        if (waited >= grace_s) {
            ic_pool_end(bg->spun_off, true); /* a case that hangs there hangs in the run too */
            break;
        }
        nanosleep(&pause, NULL); /* the cases sent end within milliseconds */
    }
    pthread_join(bg->thread, NULL);
    ic_pool_absorb(bg->pool, bg->spun_off);
    free(bg);
}
