// Tool calls read while the answer is still being generated, for streaming:
// text is released as content as soon as it cannot be the start of a call,
// and a call is released as its name, then fragments of its arguments, as
// they arrive. What cannot be read as it comes (calls written as Python or
// XML, JSON with "name" after the arguments) is held and read at the end by
// parse_tool_calls, the one parser, so the calls reported are the same ones.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"

namespace seam::chat {

struct ToolCallEvent {
  enum class Kind {
    Content,    // `text` is answer text
    Begin,      // call `index` starts: `name`, and `id` when the model gave one
    Arguments,  // `text` is the next fragment of call `index`'s arguments (JSON text)
  };
  Kind kind = Kind::Content;
  std::size_t index = 0;
  std::string text;
  std::string name;
  std::string id;
};

class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}

  // The next piece of the answer; returns what can be released now.
  std::vector<ToolCallEvent> feed(std::string_view text);

  // The answer is complete: releases what was held. Concatenating every
  // Arguments fragment of a call gives its arguments as one JSON object.
  // A call streamed from JSON that turns out unreadable (cut off, invalid)
  // cannot be withdrawn; its raw text is also sent as content at the end.
  std::vector<ToolCallEvent> finish();

  // Calls begun so far.
  std::size_t calls() const { return begun_; }

 private:
  // Content: releasing text; Seek: between calls; Head: reading a call's
  // name; Args: streaming its arguments; Tail: after them, up to the call's
  // end; Held: the rest is read by finish().
  enum class State { Content, Seek, Head, Args, Tail, Held };

  void release_content(std::vector<ToolCallEvent>& out);
  void advance(std::vector<ToolCallEvent>& out);
  bool seek_call(std::vector<ToolCallEvent>& out);
  bool read_head(std::vector<ToolCallEvent>& out);
  bool stream_args(std::vector<ToolCallEvent>& out);
  bool end_object();

  ToolCallFormat format_;
  State state_ = State::Content;
  std::string text_;        // the whole answer so far
  std::size_t sent_ = 0;    // content released up to here (Content state)
  bool decided_ = false;    // whether a bare-JSON answer was ruled in or out
  bool spoke_ = false;      // some content was released
  bool open_ = false;       // a '{' now would start a call (an opener came)
  std::size_t region_ = 0;  // where the calls begin (after Content)
  std::size_t at_ = 0;      // scan position inside the region
  std::size_t object_ = 0;  // the '{' of the call being read
  std::size_t begun_ = 0;   // calls begun (Begin events sent)
  // Arguments value being streamed: its scan state.
  int depth_ = 0;
  bool in_string_ = false, escape_ = false, string_value_ = false;
  std::size_t value_ = 0;  // where the arguments value starts
};

}  // namespace seam::chat
