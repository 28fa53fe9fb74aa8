#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "output_file.hpp"
#include "vkformer/tensor.hpp"

namespace vkf::tools {
namespace {

const char* kFont = "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\"";
const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                          "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// A tick label: 0.01, 0.1, 1, 10, 1000, 1e+05.
std::string tick(double v) {
  char b[32];
  if (v >= 1e5 || v < 1e-3) std::snprintf(b, sizeof b, "%g", v);
  else std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

void text(std::ostream& o, double x, double y, const std::string& s, int size,
          const char* anchor = "start", const std::string& extra = "") {
  o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << size << "\" "
    << kFont << " text-anchor=\"" << anchor << "\"" << extra << ">" << esc(s) << "</text>\n";
}

void line(std::ostream& o, double x1, double y1, double x2, double y2, const std::string& style) {
  o << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\""
    << num(y2) << "\" " << style << "/>\n";
}

void write_file(const std::string& path, const std::string& body, double w, double h) {
  std::ostringstream f;
  f << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(w) << "\" height=\"" << num(h)
    << "\" viewBox=\"0 0 " << num(w) << " " << num(h) << "\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << body << "</svg>\n";
  write_output(path, "--svg", f.str());
}

// Approximate text width: enough to keep labels apart without a font engine.
double text_width(const std::string& s, int size) { return 0.6 * size * double(s.size()); }

struct Box {
  double x0, y0, x1, y1;
  bool hits(const Box& b) const { return x0 < b.x1 && b.x0 < x1 && y0 < b.y1 && b.y0 < y1; }
};

}  // namespace

void write_roofline_svg(const std::string& path, const std::string& title, double peak_gflops,
                        double peak_gbps, const std::vector<RooflinePoint>& points) {
  std::vector<RooflinePoint> pts;
  for (const auto& p : points)
    if (p.intensity > 0 && p.gflops > 0) pts.push_back(p);
  const double W = 1100, H = 720, L = 90, R = 40, T = 60, B = 70;
  const double ridge = peak_gbps > 0 ? peak_gflops / peak_gbps : 1;
  double xlo = ridge, xhi = ridge, ylo = peak_gflops, yhi = peak_gflops;
  for (const auto& p : pts) {
    xlo = std::min(xlo, p.intensity), xhi = std::max(xhi, p.intensity);
    ylo = std::min(ylo, p.gflops), yhi = std::max(yhi, p.gflops);
  }
  // Whole decades with room around the extremes.
  const double lx0 = std::floor(std::log10(xlo / 1.5)), lx1 = std::ceil(std::log10(xhi * 3));
  const double ly0 = std::floor(std::log10(ylo / 1.5)), ly1 = std::ceil(std::log10(yhi * 2));
  auto X = [&](double v) { return L + (std::log10(v) - lx0) / (lx1 - lx0) * (W - L - R); };
  auto Y = [&](double v) { return H - B - (std::log10(v) - ly0) / (ly1 - ly0) * (H - T - B); };

  std::ostringstream o;
  text(o, W / 2, 32, title, 18, "middle", " font-weight=\"bold\"");
  // Grid and ticks: a labelled line per decade, faint lines at 2..9.
  for (double e = lx0; e <= lx1; ++e)
    for (int m = 1; m <= (e < lx1 ? 9 : 1); ++m) {
      double v = m * std::pow(10.0, e), x = X(v);
      line(o, x, T, x, H - B, m == 1 ? "stroke=\"#cccccc\"" : "stroke=\"#eeeeee\"");
      if (m == 1) text(o, x, H - B + 20, tick(v), 12, "middle");
    }
  for (double e = ly0; e <= ly1; ++e)
    for (int m = 1; m <= (e < ly1 ? 9 : 1); ++m) {
      double v = m * std::pow(10.0, e), y = Y(v);
      line(o, L, y, W - R, y, m == 1 ? "stroke=\"#cccccc\"" : "stroke=\"#eeeeee\"");
      if (m == 1) text(o, L - 8, y + 4, tick(v), 12, "end");
    }
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"#333333\"/>\n";
  text(o, (L + W - R) / 2, H - 22, "arithmetic intensity (FLOP/byte)", 14, "middle");
  text(o, 24, (T + H - B) / 2, "GFLOP/s", 14, "middle",
       " transform=\"rotate(-90 24 " + num((T + H - B) / 2) + ")\"");

  // The roofs: bandwidth up to the ridge, compute after it.
  const double xmin = std::pow(10.0, lx0), xmax = std::pow(10.0, lx1), ymin = std::pow(10.0, ly0);
  const double xs = std::max(xmin, ymin / peak_gbps);
  const std::string roof = "stroke=\"#444444\" stroke-width=\"2.5\"";
  line(o, X(xs), Y(xs * peak_gbps), X(ridge), Y(peak_gflops), roof);
  line(o, X(ridge), Y(peak_gflops), X(xmax), Y(peak_gflops), roof);
  std::vector<Box> used;
  for (const auto& p : pts) used.push_back({X(p.intensity) - 5, Y(p.gflops) - 5, X(p.intensity) + 5, Y(p.gflops) + 5});
  {
    std::string s = "compute peak " + num(peak_gflops) + " GFLOP/s";
    double x = X(xmax) - 8, y = Y(peak_gflops) - 8;
    text(o, x, y, s, 13, "end", " fill=\"#444444\"");
    used.push_back({x - text_width(s, 13), y - 13, x, y + 3});
    // Along the slope, a little above it, rotated to match it on screen, at
    // the first place along it where it covers no point.
    std::string b = "bandwidth " + num(peak_gbps) + " GB/s";
    double x0 = X(xs), y0 = Y(xs * peak_gbps), x1 = X(ridge), y1 = Y(peak_gflops);
    double a = std::atan2(y1 - y0, x1 - x0), w = text_width(b, 13);
    Box box{};
    double mx = 0, my = 0;
    for (double f : {0.05, 0.2, 0.35, 0.5, 0.65, 0.1}) {
      mx = x0 + f * (x1 - x0), my = y0 + f * (y1 - y0) - 8;
      double ex = mx + w * std::cos(a), ey = my + w * std::sin(a);
      box = {std::min(mx, ex), std::min(my, ey) - 13, std::max(mx, ex), std::max(my, ey) + 3};
      bool clash = false;
      for (const auto& u : used) clash = clash || u.hits(box);
      if (!clash) break;
    }
    used.push_back(box);
    text(o, mx, my, b, 13, "start",
         " fill=\"#444444\" transform=\"rotate(" + num(a * 180 / M_PI) + " " + num(mx) + " " + num(my) + ")\"");
  }

  // Points, coloured by op (the label's first word), labels placed greedily where they fit.
  std::vector<std::string> ops;
  const int fs = 12;
  for (const auto& p : pts) {
    std::string op = p.label.substr(0, p.label.find(' '));
    size_t k = std::find(ops.begin(), ops.end(), op) - ops.begin();
    if (k == ops.size()) ops.push_back(op);
    const char* col = kPalette[k % 10];
    double px = X(p.intensity), py = Y(p.gflops), w = text_width(p.label, fs);
    o << "<circle cx=\"" << num(px) << "\" cy=\"" << num(py) << "\" r=\"5\" fill=\"" << col
      << "\" stroke=\"black\" stroke-width=\"0.8\"/>\n";
    Box best{};
    bool found = false;
    double bx = 0, by = 0;
    for (int step = 0; step < 24 && !found; ++step) {
      double dy = (step / 2) * 15.0 * (step % 2 ? -1 : 1);
      for (int side = 0; side < 2 && !found; ++side) {
        double x = side == 0 ? px + 9 : px - 9 - w, y = py + 4 + dy;
        Box b{x - 1, y - fs, x + w + 1, y + 3};
        if (b.x0 < L || b.x1 > W - R || b.y0 < T || b.y1 > H - B) continue;
        bool clash = false;
        for (const auto& u : used) clash = clash || u.hits(b);
        if (!clash) best = b, bx = x, by = y, found = true;
      }
    }
    if (!found) bx = std::min(px + 9, W - R - w), by = py + 4, best = {bx, by - fs, bx + w, by + 3};
    if (std::abs(by - 4 - py) > 10)  // a leader line when the label had to move away
      line(o, px, py, bx < px ? best.x1 : best.x0, by - 4, "stroke=\"" + std::string(col) + "\" stroke-width=\"0.8\"");
    used.push_back(best);
    text(o, bx, by, p.label, fs, "start", " fill=\"" + std::string(col) + "\"");
  }
  write_file(path, o.str(), W, H);
}

void write_bar_chart_svg(const std::string& path, const std::string& title,
                         const std::vector<std::pair<std::string, double>>& bars,
                         const std::string& unit) {
  const int fs = 12;
  double label_w = 60;
  double vmax = 0;
  for (const auto& [l, v] : bars) label_w = std::max(label_w, text_width(l, fs)), vmax = std::max(vmax, v);
  label_w = std::min(label_w, 460.0);
  const double L = label_w + 24, plot_w = 560, value_w = 110, T = 60, row = 24, B = 50;
  const double W = std::max(L + plot_w + value_w, text_width(title, 18) + 40);
  const double H = T + row * double(bars.size()) + B;
  // A "nice" tick step: 1, 2 or 5 × 10^k, about five ticks.
  double raw = vmax > 0 ? vmax / 5 : 1, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  double top = std::max(step, std::ceil(vmax / step) * step);
  auto X = [&](double v) { return L + std::max(0.0, v) / top * plot_w; };

  std::ostringstream o;
  text(o, W / 2, 32, title, 18, "middle", " font-weight=\"bold\"");
  const double y_axis = T + row * double(bars.size());
  for (double v = 0; v <= top * (1 + 1e-9); v += step) {
    line(o, X(v), T - 4, X(v), y_axis, "stroke=\"#dddddd\"");
    text(o, X(v), y_axis + 18, tick(v), 12, "middle");
  }
  text(o, L + plot_w / 2, y_axis + 40, unit, 13, "middle");
  for (size_t i = 0; i < bars.size(); ++i) {
    const auto& [l, v] = bars[i];
    double y = T + row * double(i);
    std::string shown = l;
    if (text_width(shown, fs) > label_w) shown = shown.substr(0, size_t(label_w / (0.6 * fs)) - 1) + "…";
    text(o, L - 8, y + row * 0.5 + 4, shown, fs, "end");
    o << "<rect x=\"" << num(L) << "\" y=\"" << num(y + 3) << "\" width=\"" << num(X(v) - L)
      << "\" height=\"" << num(row - 6) << "\" fill=\"" << kPalette[0] << "\"/>\n";
    char val[48];
    std::snprintf(val, sizeof val, "%.3g %s", v, unit.c_str());
    text(o, X(v) + 6, y + row * 0.5 + 4, val, fs);
  }
  line(o, L, T - 4, L, y_axis, "stroke=\"#333333\"");
  write_file(path, o.str(), W, H);
}

}  // namespace vkf::tools
