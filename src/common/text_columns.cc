#include "common/text_columns.h"

#include <algorithm>

namespace gpuledger {
namespace {

constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // "…", one column

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

// The bytes of `text`'s first `columns` code points (all of it when it has fewer).
std::size_t PrefixBytes(std::string_view text, std::size_t columns) {
  std::size_t end = 0;
  for (std::size_t kept = 0; end < text.size() && kept < columns; ++kept) {
    ++end;
    while (end < text.size() && IsContinuation(text[end])) ++end;
  }
  return end;
}

}  // namespace

std::size_t DisplayWidth(std::string_view text) {
  std::size_t width = 0;
  for (char c : text) width += IsContinuation(c) ? 0 : 1;
  return width;
}

std::string Ellipsize(std::string_view text, std::size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width == 0) return {};
  // The first width - 1 code points, then "…".
  return std::string(text.substr(0, PrefixBytes(text, width - 1))) + std::string(kEllipsis);
}

std::string PadRight(std::string_view text, std::size_t width) {
  std::string out = Ellipsize(text, width);
  out.append(width - DisplayWidth(out), ' ');
  return out;
}

std::string PadLeft(std::string_view text, std::size_t width) {
  std::string out = Ellipsize(text, width);
  return std::string(width - DisplayWidth(out), ' ') + out;
}

std::string Wrap(std::string_view text, std::string_view indent, std::size_t width) {
  const std::size_t room = std::max<std::size_t>(width - std::min(width, DisplayWidth(indent)), 8);
  // A line that fits stays as it is, its columns' spacing too.
  if (!text.empty() && DisplayWidth(text) <= room)
    return std::string(indent) + std::string(text) + "\n";
  std::string out, line(indent);
  std::size_t used = 0;  // columns of `line` past the indent
  auto end_line = [&] {
    if (used > 0) out += line + "\n";
    line = std::string(indent);
    used = 0;
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (used > 0 && used + 1 + DisplayWidth(word) > room) end_line();
    // A word longer than a line (a URL, a UUID list) goes in pieces of a line each.
    while (DisplayWidth(word) > room) {
      if (used > 0) end_line();
      const std::size_t cut = PrefixBytes(word, room);
      line += word.substr(0, cut);
      used = room;
      end_line();
      word.remove_prefix(cut);
    }
    if (word.empty()) continue;
    if (used > 0) {
      line += ' ';
      ++used;
    }
    line += word;
    used += DisplayWidth(word);
  }
  end_line();
  return out;
}

}  // namespace gpuledger
