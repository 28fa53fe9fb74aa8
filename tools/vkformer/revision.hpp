// The commit the binary was built from ("abc1234", "abc1234-dirty" with
// uncommitted changes, "unknown" outside git), written at each build by
// cmake/revision.cmake. Benchmark reports record it.
#pragma once

const char* vkf_git_revision();
