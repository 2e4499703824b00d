#include "report/flame_colors.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace offwake::report {

namespace {

// A range of colours in HSL: hue in degrees, saturation and lightness in [0, 1]. A frame gets
// hue + a * hue_span and light + b * light_span, a and b from its name's hash.
struct Palette {
  double hue, hue_span, sat, light, light_span;
};

Palette palette(FlameKind kind) {
  switch (kind) {
    case FlameKind::kThread: return {28, 12, 0.30, 0.70, 0.08};       // tan
    case FlameKind::kUser: return {0, 22, 0.75, 0.58, 0.10};          // red to orange
    case FlameKind::kKernel: return {34, 20, 0.85, 0.55, 0.10};       // orange to amber
    case FlameKind::kSeparator: return {0, 0, 0, 0.62, 0};            // grey
    case FlameKind::kWakerKernel: return {168, 24, 0.50, 0.52, 0.10}; // teal to cyan
    case FlameKind::kWakerUser: return {205, 28, 0.65, 0.62, 0.10};   // blue
    case FlameKind::kWakerThread: return {222, 10, 0.22, 0.72, 0.08}; // slate
    case FlameKind::kOnCpu: return {100, 25, 0.55, 0.50, 0.08};       // green
    case FlameKind::kOffCpu: return {262, 20, 0.45, 0.66, 0.08};      // lavender
  }
  return {0, 0, 0, 0.5, 0};
}

// FNV-1a: stable across runs and machines, unlike std::hash.
uint32_t name_hash(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

std::string hsl_hex(double h, double s, double l) {
  // HSL to RGB (CSS Color 4's formula).
  const auto f = [&](double n) {
    const double k = std::fmod(n + h / 30.0, 12.0);
    const double a = s * std::min(l, 1 - l);
    return l - a * std::max(-1.0, std::min({k - 3, 9 - k, 1.0}));
  };
  const auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  char buf[8];
  snprintf(buf, sizeof buf, "#%02x%02x%02x", byte(f(0)), byte(f(8)), byte(f(4)));
  return buf;
}

std::string color_at(FlameKind kind, double a, double b) {
  const Palette p = palette(kind);
  double hue = std::fmod(p.hue + a * p.hue_span + 360.0, 360.0);
  return hsl_hex(hue, p.sat, p.light + b * p.light_span);
}

}  // namespace

std::string frame_color(FlameKind kind, std::string_view name) {
  const uint32_t h = name_hash(name);
  return color_at(kind, (h & 0xffff) / 65535.0, (h >> 16) / 65535.0);
}

std::string legend_color(FlameKind kind) { return color_at(kind, 0.5, 0.5); }

const char* legend_label(FlameKind kind) {
  switch (kind) {
    case FlameKind::kThread: return "thread";
    case FlameKind::kUser: return "user";
    case FlameKind::kKernel: return "kernel";
    case FlameKind::kSeparator: return "-- (waker above)";
    case FlameKind::kWakerKernel: return "waker kernel";
    case FlameKind::kWakerUser: return "waker user";
    case FlameKind::kWakerThread: return "waker thread";
    case FlameKind::kOnCpu: return "[on-cpu]";
    case FlameKind::kOffCpu: return "[off-cpu]";
  }
  return "?";
}

const char* kind_name(FlameKind kind) {
  switch (kind) {
    case FlameKind::kThread: return "thread";
    case FlameKind::kUser: return "user";
    case FlameKind::kKernel: return "kernel";
    case FlameKind::kSeparator: return "separator";
    case FlameKind::kWakerKernel: return "waker-kernel";
    case FlameKind::kWakerUser: return "waker-user";
    case FlameKind::kWakerThread: return "waker-thread";
    case FlameKind::kOnCpu: return "on-cpu";
    case FlameKind::kOffCpu: return "off-cpu";
  }
  return "?";
}

}  // namespace offwake::report
