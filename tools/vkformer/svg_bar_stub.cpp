// TEMPORARY (branch benchmodel): a minimal write_bar_chart_svg so `bench model`
// builds and is tested before `bench ops` lands with the real svg.cpp.
// Drop this file (and its line in CMakeLists.txt) when merging benchops.
#include "svg.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "vkformer/tensor.hpp"

namespace vkf::tools {
namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

void write_bar_chart_svg(const std::string& path, const std::string& title,
                         const std::vector<std::pair<std::string, double>>& bars,
                         const std::string& unit) {
  const double row = 18, top = 50, left = 190, plot = 520, right = 110;
  double vmax = 0;
  size_t label_chars = 0;
  for (const auto& [label, v] : bars) {
    vmax = std::max(vmax, v);
    label_chars = std::max(label_chars, label.size());
  }
  const double label_w = std::max(left, 7.0 * double(label_chars) + 20);
  if (vmax <= 0) vmax = 1;
  const double width = std::max(label_w + plot + right, 7.5 * double(title.size()) + 20), height = top + row * double(bars.size()) + 40;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  num(width, 0) + "\" height=\"" + num(height, 0) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"10\" y=\"22\" font-size=\"14\">" + escape(title) + "</text>\n";
  for (int t = 0; t <= 4; ++t) {  // ticks at 0, 1/4, ..., vmax
    const double x = label_w + plot * t / 4.0, v = vmax * t / 4.0;
    s += "<line x1=\"" + num(x, 1) + "\" y1=\"" + num(top - 5, 0) + "\" x2=\"" + num(x, 1) + "\" y2=\"" +
         num(top + row * double(bars.size()), 0) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(x, 1) + "\" y=\"" + num(top + row * double(bars.size()) + 16, 0) +
         "\" text-anchor=\"middle\" font-size=\"11\">" + escape(num(v, 2) + " " + unit) + "</text>\n";
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const double y = top + row * double(i), v = std::max(0.0, bars[i].second);
    const double w = plot * v / vmax;
    s += "<text x=\"" + num(label_w - 6, 1) + "\" y=\"" + num(y + 13, 1) + "\" text-anchor=\"end\">" +
         escape(bars[i].first) + "</text>\n";
    s += "<rect x=\"" + num(label_w, 1) + "\" y=\"" + num(y + 3, 1) + "\" width=\"" + num(w, 1) +
         "\" height=\"" + num(row - 5, 1) + "\" fill=\"#4878a8\"/>\n";
    s += "<text x=\"" + num(label_w + w + 4, 1) + "\" y=\"" + num(y + 13, 1) + "\" font-size=\"11\">" +
         escape(num(bars[i].second) + " " + unit) + "</text>\n";
  }
  s += "</svg>\n";
  std::ofstream out(path);
  out << s;
  if (!out) throw Error("cannot write " + path);
}

}  // namespace vkf::tools
