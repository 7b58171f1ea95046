/*
 * The sandbox ("pause") process of the real-node test environment's pods, built by
 * tests/controlplane/build.py with the system C compiler as a static binary.
 *
 * It holds the pod's namespaces open and does nothing else: it sleeps until a signal
 * arrives, reaps any child that was re-parented to it (it is pid 1 of the pod's pid
 * namespace when the pod shares one), and exits 0 on SIGINT or SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested = 0;

static void on_stop(int signum) {
    (void)signum;
    stop_requested = 1;
}

static void on_child(int signum) {
    int saved = errno;
    (void)signum;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = saved;
}

static int install(int signum, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = signum == SIGCHLD ? SA_NOCLDSTOP | SA_RESTART : 0;
    return sigaction(signum, &action, NULL);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        puts("nvcre-pause 1");
        return 0;
    }
    if (install(SIGINT, on_stop) != 0 || install(SIGTERM, on_stop) != 0 || install(SIGCHLD, on_child) != 0) {
        perror("sigaction");
        return 1;
    }
    if (getpid() != 1) {
        fputs("nvcre-pause: not pid 1 of its namespace; serving anyway\n", stderr);
    }
    while (!stop_requested) {
        pause();
    }
    return 0;
}
