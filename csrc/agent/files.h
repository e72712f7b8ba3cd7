/*
** The file ops of the runtime (spec §4.2, §5.6), one function each with
** the same shape: check the request, do the work below fs->root, build
** the result object (the two data-fd ops also take the fd). They run in a forked handler, so they may block on
** disk; nothing here ever blocks on a FIFO (O_NONBLOCK, S_ISREG checks).
*/
#ifndef AG_FILES_H
#define AG_FILES_H

#include <jansson.h>

#include "agent/err.h"
#include "agent/paths.h"

#define AG_READ_MAX (16u << 20)       /* file_read: whole file */
#define AG_READ_LINES 2000            /* file_read window */
#define AG_READ_CHARS 8000
#define AG_READ_BINARY_MAX (4u << 20)
#define AG_WRITE_MAX 1000000          /* write, write_binary, edit result */
#define AG_FD_MAX (64ll << 20)        /* file_read_fd, file_write_fd (objects) */
#define AG_LIST_MAX 500
#define AG_GLOB_PATTERN_MAX 200
#define AG_GLOB_MAX 200
#define AG_GREP_FILES_MAX 200
#define AG_GREP_FILE_BYTES 1000000    /* larger files are skipped */
#define AG_GREP_PATTERN_MAX 1000
#define AG_GREP_CONTEXT_MAX 5

typedef int (*ag_file_fn)(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);

int ag_op_file_list(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);
int ag_op_file_read(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);
int ag_op_file_glob(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);
int ag_op_file_grep(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);
int ag_op_file_write(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);
int ag_op_file_edit(const ag_fs *fs, json_t *req, json_t **result, ag_err *e);

/* The ops with a data fd (object import/export): a whole file streamed
** to the fd, or the fd's content written atomically to a file. */
typedef int (*ag_file_fd_fn)(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);
int ag_op_file_read_fd(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);
int ag_op_file_write_fd(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);

/* The binary ops, whose content may skip the JSON frame: with datafd -1
** it is in the frame (content_base64) as the routes have it; with a data
** fd, file_write_binary reads the content_base64 text from the fd (the
** frame has no content_base64; every check runs as on the frame's), and
** file_read_binary writes the file's bytes to the fd (the result has no
** content_base64: the server encodes the bytes into its reply). */
int ag_op_file_read_binary(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);
int ag_op_file_write_binary(const ag_fs *fs, json_t *req, int datafd, json_t **result, ag_err *e);

/* Reads a whole regular file (at most max bytes) reached by a normalised
** path; *real gets where it really is. Shared by read and edit. */
int ag_read_regular(const ag_fs *fs, const char *norm, const char *shown, size_t max,
                    char **data, size_t *len, char *real, ag_err *e);

#endif
