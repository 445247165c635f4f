#include "spec/annotations.h"

namespace opc {

Annotations annotations_of(const c10::FunctionSchema& schema) {
  Annotations a;
  const auto& args = schema.arguments();
  for (const auto& arg : args) a.mutable_arg.push_back(arg.alias_info() && arg.alias_info()->isWrite());
  for (const auto& ret : schema.returns()) {
    int alias = -1;
    if (const c10::AliasInfo* ra = ret.alias_info())
      for (size_t i = 0; i < args.size() && alias < 0; ++i)
        if (const c10::AliasInfo* aa = args[i].alias_info())
          for (const auto& set : ra->beforeSets())
            if (aa->beforeSets().count(set)) alias = static_cast<int>(i);
    a.return_alias.push_back(alias);
  }
  return a;
}

}  // namespace opc
