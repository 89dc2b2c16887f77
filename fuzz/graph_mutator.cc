#include "fuzz/graph_mutator.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace graphopt {
namespace fuzz {
namespace {

constexpr int64_t kEdgeInts[] = {0,  1,  2,  3,  -1, -2, 64, 1 << 20, int64_t{1} << 40,
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};

int64_t EdgeInt(std::minstd_rand& rng) {
  return kEdgeInts[rng() % (sizeof(kEdgeInts) / sizeof(kEdgeInts[0]))];
}

// Every value name the graph defines or reads.
std::vector<std::string> ValueNames(const v1::Graph& g) {
  std::vector<std::string> names;
  for (const v1::ValueInfo& v : g.inputs()) names.push_back(v.name());
  for (const v1::Tensor& t : g.initializers()) names.push_back(t.name());
  for (const v1::Node& n : g.nodes()) {
    for (const std::string& o : n.outputs()) names.push_back(o);
  }
  return names;
}

void MutateDim(std::minstd_rand& rng, v1::Dim* d) {
  switch (rng() % 4) {
    case 0: d->set_size(EdgeInt(rng)); break;
    case 1: d->set_size(rng() % 8); break;
    case 2: d->set_symbol(rng() % 2 ? "batch" : "n"); break;
    default: d->Clear(); break;  // unknown
  }
}

void MutateShape(std::minstd_rand& rng, v1::TensorType* t) {
  v1::Shape* s = t->mutable_shape();
  switch (rng() % 4) {
    case 0:
      if (s->dims_size() > 0) {
        MutateDim(rng, s->mutable_dims(rng() % s->dims_size()));
        return;
      }
      [[fallthrough]];
    case 1:
      MutateDim(rng, s->add_dims());
      return;
    case 2:
      if (s->dims_size() > 0) s->mutable_dims()->RemoveLast();
      return;
    default:
      t->clear_shape();  // rank unknown
      return;
  }
}

void SetAttribute(const v1::AttributeSpec* spec, std::minstd_rand& rng, v1::Attribute* a) {
  const v1::AttributeType type = spec != nullptr ? spec->type()
                                 : a->has_ints() ? v1::ATTR_INTS
                                 : a->has_f()    ? v1::ATTR_FLOAT
                                                 : v1::ATTR_INT;
  switch (type) {
    case v1::ATTR_INTS:
    case v1::ATTR_SHAPE: {
      a->mutable_ints()->clear_values();
      const int n = rng() % 6;
      for (int i = 0; i < n; ++i) a->mutable_ints()->add_values(rng() % 3 ? rng() % 4 : EdgeInt(rng));
      break;
    }
    case v1::ATTR_FLOAT:
      a->set_f(rng() % 2 ? 0.0f : std::numeric_limits<float>::infinity());
      break;
    case v1::ATTR_FLOATS:
      a->mutable_floats()->add_values(-1.0f);
      break;
    case v1::ATTR_STRING:
      a->set_s(rng() % 2 ? "" : "NOTSET");
      break;
    case v1::ATTR_DTYPE:
      a->set_dtype(static_cast<v1::DataType>(rng() % 17));
      break;
    default:
      a->set_i(EdgeInt(rng));
      break;
  }
}

}  // namespace

void MutateGraph(const OpRegistry& ops, std::minstd_rand& rng, v1::Graph* g) {
  const int num_nodes = g->nodes_size();
  const int index = num_nodes > 0 ? static_cast<int>(rng() % num_nodes) : -1;
  v1::Node* node = index >= 0 ? g->mutable_nodes(index) : nullptr;
  switch (rng() % 9) {
    case 0: {  // another op
      if (node == nullptr) break;
      static const std::vector<const OpDef*>* const kOps =
          new std::vector<const OpDef*>(ops.List());
      const OpDef* op = (*kOps)[rng() % kOps->size()];
      node->set_op_type(op->descriptor.name());
      node->set_domain(op->descriptor.domain());
      for (const v1::AttributeSpec& spec : op->descriptor.attributes()) {
        if (!spec.required()) continue;
        v1::Attribute* a = node->add_attributes();
        a->set_name(spec.name());
        SetAttribute(&spec, rng, a);
      }
      break;
    }
    case 1: {  // an attribute's value, or a new attribute the op declares
      if (node == nullptr) break;
      const OpDef* op = ops.Find(node->domain(), node->op_type());
      if (node->attributes_size() > 0 && rng() % 2) {
        v1::Attribute* a = node->mutable_attributes(rng() % node->attributes_size());
        SetAttribute(op != nullptr ? op->attribute_spec(a->name()) : nullptr, rng, a);
      } else if (op != nullptr && op->descriptor.attributes_size() > 0) {
        const v1::AttributeSpec& spec =
            op->descriptor.attributes(rng() % op->descriptor.attributes_size());
        for (const v1::Attribute& a : node->attributes()) {
          if (a.name() == spec.name()) return;
        }
        v1::Attribute* a = node->add_attributes();
        a->set_name(spec.name());
        SetAttribute(&spec, rng, a);
      }
      break;
    }
    case 2: {  // rewire an input
      if (node == nullptr || node->inputs_size() == 0) break;
      const std::vector<std::string> names = ValueNames(*g);
      if (!names.empty()) node->set_inputs(rng() % node->inputs_size(), names[rng() % names.size()]);
      break;
    }
    case 3: {  // add or drop an input
      if (node == nullptr) break;
      if (node->inputs_size() > 0 && rng() % 2) {
        node->mutable_inputs()->RemoveLast();
      } else {
        const std::vector<std::string> names = ValueNames(*g);
        node->add_inputs(names.empty() || rng() % 4 == 0 ? "" : names[rng() % names.size()]);
      }
      break;
    }
    case 4: {  // duplicate a node, reading the original's outputs or its inputs
      if (node == nullptr || num_nodes > 256) break;
      v1::Node copy = *node;
      copy.set_name(absl::StrCat(node->name(), "_dup", rng() % 1000));
      for (int i = 0; i < copy.outputs_size(); ++i) {
        if (rng() % 2 && i < copy.inputs_size()) copy.set_inputs(i, node->outputs(i));
        copy.set_outputs(i, absl::StrCat(copy.outputs(i), "_dup", rng() % 1000));
      }
      *g->add_nodes() = std::move(copy);
      break;
    }
    case 5:  // remove a node
      if (node == nullptr) break;
      g->mutable_nodes()->DeleteSubrange(index, 1);
      break;
    case 6:  // a graph input's shape or dtype
      if (g->inputs_size() == 0) break;
      {
        v1::TensorType* t = g->mutable_inputs(rng() % g->inputs_size())->mutable_type();
        if (rng() % 4 == 0) {
          t->set_dtype(static_cast<v1::DataType>(rng() % 17));
        } else {
          MutateShape(rng, t);
        }
      }
      break;
    case 7:  // an initializer's dims or dtype (its data left as it is)
      if (g->initializers_size() == 0) break;
      {
        v1::Tensor* t = g->mutable_initializers(rng() % g->initializers_size());
        switch (rng() % 3) {
          case 0:
            if (t->dims_size() > 0) t->set_dims(rng() % t->dims_size(), rng() % 2 ? 0 : EdgeInt(rng));
            break;
          case 1:
            t->add_dims(1);
            break;
          default:
            t->set_dtype(static_cast<v1::DataType>(rng() % 17));
            break;
        }
      }
      break;
    default:  // a graph output becomes another value
      if (g->outputs_size() > 0) {
        const std::vector<std::string> names = ValueNames(*g);
        if (!names.empty()) {
          g->mutable_outputs(rng() % g->outputs_size())->set_name(names[rng() % names.size()]);
        }
      }
      break;
  }
}

}  // namespace fuzz
}  // namespace graphopt
