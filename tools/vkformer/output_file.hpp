// Every file the CLI writes goes through here, so that no command clobbers what
// it should not or reports "wrote" for a file that is not there:
// - an existing output that is not a regular file (a device, FIFO, directory),
//   a symlink, or one of the command's inputs (same device and inode, or a
//   file inside the model directory) is refused before any work;
// - "-" writes to stdout;
// - a file is written as PATH.partial, every write and the close are checked
//   (a full disk is an error, and the partial file is removed), then renamed;
// - SIGINT / SIGTERM during a write remove the partial file.
#pragma once

#include <string>

namespace vkf::tools {

/// Remembers a path the command reads (a model directory, an --input file);
/// an output that is, or is inside, one of them is refused. Missing paths are ignored.
void add_input_path(const std::string& path);

/// Checks that `path` (given with `option`, e.g. "--out") may be written:
/// "-", a new file in a writable directory, or an existing regular file that is
/// not a symlink and not an input. @throws UsageError naming the option and
/// path, or vkf::Error when the directory is missing or not writable.
void check_output_path(const std::string& path, const std::string& option);

/// Writes `bytes` to `path` ("-": stdout) as described above.
/// @throws vkf::Error naming the path and the system's reason.
void write_output(const std::string& path, const std::string& option, const std::string& bytes);

/// SIGINT and SIGTERM remove the partial files being written, then end the
/// process as the signal would have. Call once at start.
void install_output_cleanup();

/// Flushes stdout; on a write error (now or earlier), throws Error
/// "stdout: write error: ...": for output streamed while the command runs.
/// `known_errno`: the reason of an earlier failed flush, if the stream has no newer one.
void flush_stdout(int known_errno = 0);

/// Flushes stdout; on a write error (now or earlier, e.g. a full disk or a
/// closed pipe) prints "vkformer: error: stdout: write error: ..." and returns 1.
int finish_stdout();

}  // namespace vkf::tools
