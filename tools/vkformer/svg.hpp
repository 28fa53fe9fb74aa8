// A tiny SVG writer for the benchmark commands (`bench ops`, `bench model`):
// self-contained files, no plotting dependency. Text is at least 11 px, labels
// are XML-escaped, the files are well-formed XML.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vkf::tools {

/// One measured kernel on a roofline chart.
struct RooflinePoint {
  std::string label;  ///< e.g. "gemm blocked 128x3072x768"
  double intensity;   ///< arithmetic intensity, FLOP per byte (> 0)
  double gflops;      ///< achieved GFLOP/s (> 0)
};

/// Writes a roofline chart: log-log axes (x: FLOP/byte, y: GFLOP/s) with
/// labelled decade ticks, the bandwidth roof (peak_gbps · intensity) and the
/// compute roof (peak_gflops), and one labelled point per entry. Points with a
/// non-positive coordinate are left out. `title` is printed at the top (put
/// the device and the date in it).
/// @throws vkf::Error when the file cannot be written.
void write_roofline_svg(const std::string& path, const std::string& title, double peak_gflops,
                        double peak_gbps, const std::vector<RooflinePoint>& points);

/// Writes a horizontal bar chart: one bar per (label, value), in the given
/// order, top to bottom, on a linear axis from 0 with labelled ticks; each bar
/// carries its value and `unit` (e.g. "ms") at its end. Negative values are
/// drawn as 0. Suits per-op or per-layer times.
/// @throws vkf::Error when the file cannot be written.
void write_bar_chart_svg(const std::string& path, const std::string& title,
                         const std::vector<std::pair<std::string, double>>& bars,
                         const std::string& unit);

}  // namespace vkf::tools
