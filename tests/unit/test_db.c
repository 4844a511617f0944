#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/db.h"
#include "tests/unit/t.h"

enum { OPENERS = 8, ROUNDS = 30 };

/* Removes DIR/larder.db and its WAL files, then DIR. */
static void remove_db(const char *dir)
{
	static const char *const files[] = {"larder.db", "larder.db-wal",
					    "larder.db-shm"};
	char path[512];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Many workers start at once on an empty data directory: every one of them
 * opens the database, and none of them sees "database is locked" (the
 * schema is created under one write lock, with the busy handler waiting
 * for it). A child exits 0 only when db_open succeeded. */
T(open_race_on_fresh_store)
{
	for (int round = 0; round < ROUNDS; round++) {
		char dir[] = "/tmp/larder-test-db-XXXXXX";
		int pipefd[2];
		pid_t kids[OPENERS];
		int ok = 0;

		if (!mkdtemp(dir) || pipe(pipefd) != 0) {
			CHECK(!"mkdtemp or pipe failed");
			return;
		}
		for (int i = 0; i < OPENERS; i++) {
			kids[i] = fork();
			if (kids[i] == 0) {
				struct db *db = NULL;
				char go;
				int err;

				close(pipefd[1]);
				/* Everyone starts when the pipe closes. */
				if (read(pipefd[0], &go, 1) < 0)
					_exit(2);
				err = db_open(dir, &db);
				db_close(db);
				_exit(err == 0 ? 0 : 1);
			}
		}
		close(pipefd[0]);
		close(pipefd[1]);
		for (int i = 0; i < OPENERS; i++) {
			int status = 0;

			if (kids[i] > 0 && waitpid(kids[i], &status, 0) == kids[i] &&
			    WIFEXITED(status) && WEXITSTATUS(status) == 0)
				ok++;
		}
		CHECK_INT(ok, OPENERS);
		remove_db(dir);
		if (ok != OPENERS)
			return;
	}
}

int main(void)
{
	RUN(open_race_on_fresh_store);
	return t_done();
}
