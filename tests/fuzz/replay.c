// SPDX-License-Identifier: MIT
// Replays corpus files through a fuzz target without libFuzzer, so that the normal
// builds (gcc, and clang with ASan/UBSan) run every seed and every saved crash as a
// regression test. Usage: fuzz_TARGET_replay FILE|DIR...; fails when no input is found.
#include "fuzz.h"

#include <dirent.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	size_t   cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (buf == NULL) {
			fclose(f);
			fprintf(stderr, "replay: out of memory\n");
			return -1;
		}
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap) {
			break;
		}
		cap *= 2;
		uint8_t *nb = realloc(buf, cap);
		if (nb == NULL) {
			free(buf);
		}
		buf = nb;
	}
	bool bad = ferror(f) != 0;
	fclose(f);
	if (bad) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		return -1;
	}
	// The same contract as libFuzzer's: the data is exactly len bytes, nothing after.
	uint8_t *exact = malloc(len > 0 ? len : 1);
	if (exact == NULL) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	(void) LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int
replay_path(const char *path, size_t *count)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	DIR *d = opendir(path);
	if (d == NULL) {
		perror(path);
		return -1;
	}
	int            rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char p[4096];
		if (de->d_name[0] == '.') {
			continue;
		}
		if (snprintf(p, sizeof p, "%s/%s", path, de->d_name) >= (int) sizeof p) {
			rc = -1;
			break;
		}
		rc = replay_path(p, count);
	}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	size_t count = 0;
	for (int i = 1; i < argc; i++) {
		if (replay_path(argv[i], &count) != 0) {
			return 1;
		}
	}
	printf("replay: %zu inputs, all passed\n", count);
	return count > 0 ? 0 : 1;
}
