// `vkformer chat`: a conversation through the model directory's chat template.
// On a terminal: a "> " prompt, the answer streamed, the history kept, /reset
// to start over, /exit (or end of input) to leave. Piped: each non-empty line of
// stdin is the next user message of one conversation, and each answer is printed
// on its own line.
#pragma once

#include "generate_command.hpp"

namespace vkf::tools {

/// Returns the exit code; bad input throws vkf::Error.
int run_chat(const ContextOptions& ctx_opts, const GenerateCliOptions& o);

}  // namespace vkf::tools
