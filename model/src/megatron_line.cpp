// A pasted launch line -> its environment assignments, launcher, script and the script's arguments.
// The words are split as a POSIX shell splits them (quotes, backslashes, backslash-newline
// continuations, comments); nothing is expanded: a $VAR, ${VAR} or command substitution is an error
// naming it, because its value is not on the line. Pipes, redirections and subshells are errors too:
// the line is one command (earlier lines may only export environment variables).
#include <cctype>

#include "megatron_detail.hpp"

namespace peakcast::model::detail {

namespace {

struct Word {
  std::string text;
  bool assignment = false;             // NAME=value with NAME unquoted
  std::vector<std::string> variables;  // shell expansions met in the word, as written
};

using Command = std::vector<Word>;

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
 public:
  Lexer(std::string_view s, bool allow_variables, Diagnostics& out) : s_(s), allow_(allow_variables), out_(out) {}

  std::optional<std::vector<Command>> run() {
    commands_.emplace_back();
    while (i_ < s_.size()) {
      if (!step()) return std::nullopt;
    }
    end_word();
    return commands_;
  }

 private:
  std::string_view s_;
  bool allow_;
  Diagnostics& out_;
  std::size_t i_ = 0;
  std::vector<Command> commands_;
  Word w_;
  bool in_word_ = false;
  bool name_prefix_ = true;  // every character of the word so far is an unquoted name character

  void add(char c, bool quoted) {
    if (!w_.assignment && name_prefix_) {
      if (!quoted && c == '=' && !w_.text.empty()) w_.assignment = true;
      else if (quoted || !(w_.text.empty() ? name_start(c) : name_char(c))) name_prefix_ = false;
    }
    w_.text += c;
    in_word_ = true;
  }

  void end_word() {
    if (in_word_) commands_.back().push_back(std::move(w_));
    w_ = Word{};
    in_word_ = false;
    name_prefix_ = true;
  }

  bool fail(const std::string& rule, const std::string& message) {
    out_.push_back({Severity::error, "", rule, message});
    return false;
  }

  // At '$': a parameter expansion or command substitution (an error), else a literal '$'.
  bool dollar(bool quoted) {
    const std::size_t start = i_;
    const char next = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
    std::size_t end = i_ + 1;
    if (next == '{') {
      end = s_.find('}', i_ + 2);
      if (end == std::string_view::npos) return fail("shell_syntax", "'${' without a closing '}'");
      ++end;
    } else if (name_start(next)) {
      while (end < s_.size() && name_char(s_[end])) ++end;
    } else if (std::isdigit(static_cast<unsigned char>(next)) || std::string_view("@*#?$!-").find(next) != std::string_view::npos) {
      end = i_ + 2;
    } else if (next == '(' || next == '\'') {
      return fail("shell_command_substitution", std::string("'$") + next +
                                                    "' (a command substitution or $'...' quoting) is not read: peakcast takes the line as written; "
                                                    "put the value itself in the line");
    } else {
      add('$', quoted);
      ++i_;
      return true;
    }
    const std::string text(s_.substr(start, end - start));
    if (allow_) {
      for (char c : text) add(c, true);
    } else {
      w_.variables.push_back(text);
      in_word_ = true;
      name_prefix_ = false;
    }
    i_ = end;
    return true;
  }

  bool single_quoted() {
    const std::size_t close = s_.find('\'', i_ + 1);
    if (close == std::string_view::npos) return fail("shell_syntax", "unterminated single quote");
    for (std::size_t k = i_ + 1; k < close; ++k) add(s_[k], true);
    if (close == i_ + 1) in_word_ = true;  // '' is an empty word
    i_ = close + 1;
    return true;
  }

  bool double_quoted() {
    in_word_ = true;
    ++i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\' && i_ + 1 < s_.size() && std::string_view("$`\"\\\n").find(s_[i_ + 1]) != std::string_view::npos) {
        if (s_[i_ + 1] != '\n') add(s_[i_ + 1], true);
        i_ += 2;
      } else if (c == '$') {
        if (!dollar(true)) return false;
      } else if (c == '`') {
        return fail("shell_command_substitution", "a `...` command substitution is not read: put its value in the line");
      } else {
        add(c, true);
        ++i_;
      }
    }
    return fail("shell_syntax", "unterminated double quote");
  }

  bool step() {
    const char c = s_[i_];
    if (c == '\\') {
      if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
        return true;
      }  // continuation
      if (i_ + 2 < s_.size() && s_[i_ + 1] == '\r' && s_[i_ + 2] == '\n') {
        i_ += 3;
        return true;
      }
      if (i_ + 1 < s_.size()) {
        add(s_[i_ + 1], true);
        i_ += 2;
        return true;
      }
      add('\\', true);
      ++i_;
      return true;
    }
    if (c == '\'') return single_quoted();
    if (c == '"') return double_quoted();
    if (c == '$') return dollar(false);
    if (c == '`') return fail("shell_command_substitution", "a `...` command substitution is not read: put its value in the line");
    if (c == '#' && !in_word_) {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      return true;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      end_word();
      ++i_;
      return true;
    }
    if (c == '\n' || c == ';') {
      end_word();
      commands_.emplace_back();
      ++i_;
      return true;
    }
    if (std::string_view("|&<>()").find(c) != std::string_view::npos) {
      return fail("shell_operator", std::string("shell operator '") + c +
                                        "' (a pipe, redirection, background job or subshell): peakcast reads one launch command; "
                                        "remove it, or quote a value that contains it");
    }
    add(c, false);
    ++i_;
    return true;
  }
};

bool is_python(const std::string& word) {
  const std::string b = basename(word);
  if (b.rfind("python", 0) != 0) return false;
  for (std::size_t k = 6; k < b.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(b[k])) && b[k] != '.') return false;
  return true;
}

// Each shell expansion is reported once, with the argument it sits in as the path.
void report_variables(const std::vector<Command>& commands, Diagnostics& out) {
  for (const auto& cmd : commands) {
    std::string option;
    for (const auto& w : cmd) {
      if (w.text.rfind("-", 0) == 0) option = w.text.substr(0, w.text.find('='));
      for (const auto& v : w.variables) {
        const std::string path = option.empty() ? v : option;
        out.push_back({Severity::error, path, "shell_variable",
                       v + " is a shell variable: its value is not on the line, and peakcast does not expand variables; "
                           "write the value itself"});
      }
    }
  }
}

// Earlier commands may only export variables (their values reach the launched process) or set shell
// variables (which do not).
bool read_preamble(const Command& cmd, LaunchLine& line, Diagnostics& out) {
  std::size_t k = 0;
  const bool exported = !cmd.empty() && cmd[0].text == "export" && !cmd[0].assignment;
  if (exported) ++k;
  for (; k < cmd.size(); ++k) {
    const Word& w = cmd[k];
    if (!w.assignment) {
      out.push_back({Severity::error, w.text, "several_commands",
                     "the line holds more than one command ('" + cmd[0].text +
                         " ...' before the launch); give the one launch command (earlier lines may only export "
                         "environment variables)"});
      return false;
    }
    const auto eq = w.text.find('=');
    if (exported) line.env.emplace_back(w.text.substr(0, eq), w.text.substr(eq + 1));
    else line.ignored.push_back(w.text + " (a shell variable, not exported: the launched process does not see it)");
  }
  return true;
}

}  // namespace

std::optional<LaunchLine> read_launch_line(std::string_view text, bool allow_variables, Diagnostics& out) {
  Lexer lexer(text, allow_variables, out);
  auto lexed = lexer.run();
  if (!lexed) return std::nullopt;
  report_variables(*lexed, out);
  std::vector<Command> commands;
  for (auto& c : *lexed)
    if (!c.empty()) commands.push_back(std::move(c));
  if (commands.empty()) {
    out.push_back({Severity::error, "", "empty_launch_line", "the Megatron-LM launch line is empty"});
    return std::nullopt;
  }
  LaunchLine line;
  for (std::size_t c = 0; c + 1 < commands.size(); ++c)
    if (!read_preamble(commands[c], line, out)) return std::nullopt;
  const Command& cmd = commands.back();
  std::size_t k = 0;
  while (k < cmd.size() && (cmd[k].assignment || (cmd[k].text == "env" && k + 1 < cmd.size()))) {
    if (cmd[k].assignment) {
      const auto eq = cmd[k].text.find('=');
      line.env.emplace_back(cmd[k].text.substr(0, eq), cmd[k].text.substr(eq + 1));
    }
    ++k;
  }
  if (k == cmd.size()) {
    out.push_back({Severity::error, "", "no_launch_command",
                   "the line sets environment variables but launches nothing; give the torchrun / python / "
                   "pretrain_gpt.py command or the Megatron-LM arguments"});
    return std::nullopt;
  }
  std::vector<std::string> words;
  for (; k < cmd.size(); ++k) words.push_back(cmd[k].text);
  if (!read_launcher(words, line, out)) return std::nullopt;
  return line;
}

bool looks_like_launch_line(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {  // skip blank lines and comments
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    break;
  }
  std::size_t j = i;
  while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
  const std::string word(text.substr(i, j - i));
  if (word.empty()) return false;
  if (word.rfind("--", 0) == 0) return true;
  if (word == "export" || word == "env" || is_python(word)) return true;
  const std::string b = basename(word);
  if (b == "torchrun" || (b.size() > 3 && b.compare(b.size() - 3, 3, ".py") == 0 && b.rfind("pretrain_", 0) == 0)) return true;
  if (name_start(word[0])) {  // NAME=value
    std::size_t k = 1;
    while (k < word.size() && name_char(word[k])) ++k;
    return k < word.size() && word[k] == '=';
  }
  return false;
}

}  // namespace peakcast::model::detail
