#ifndef GRAPHOPT_RULES_EXAMPLE_RULES_H_
#define GRAPHOPT_RULES_EXAMPLE_RULES_H_

// Shape rules for six builtin ops written in the rule language. They reproduce the C++ shape
// functions (checked by builtin_equivalence_test), serve as worked examples
// (docs/rule-language.md) and as the benchmark's workload (bench/rules_benchmark.cc).

namespace graphopt {
namespace example_rules {

inline constexpr char kConvRule[] = R"rule(
# Conv: X [N, C, D1..Dn], W [M, C/group, k1..kn], optional B [M].
assert rank(X) >= 3, "input X must have rank >= 3, got ", shape(X);
assert rank(W) >= 3, "input W must have rank >= 3, got ", shape(W);
assert rank(X) == rank(W), "input X ", shape(X), " and weight W ", shape(W), " differ in rank";
let g = attr.group;
assert g > 0, "attribute 'group' must be positive, got ", g;
# The rank comes from X, else W, else kernel_shape; unknown when none says.
let r = rank(X) | rank(W) | (if has_attr("kernel_shape") then len(attr.kernel_shape) + 2
                             else unknown);
let n = r - 2;
let x = shape(X) | [unknown for i in range(r)];
let w = shape(W) | [unknown for i in range(r)];
let k = if has_attr("kernel_shape") then attr.kernel_shape else w[2:];
let s = attr("strides", [1 for i in range(n)]);
let d = attr("dilations", [1 for i in range(n)]);
let p = attr("pads", [0 for i in range(2 * n)]);
assert len(k) == n, "attribute 'kernel_shape' has ", len(k), " values, expected ", n;
assert len(s) == n, "attribute 'strides' has ", len(s), " values, expected ", n;
assert len(d) == n, "attribute 'dilations' has ", len(d), " values, expected ", n;
assert len(p) == 2 * n, "attribute 'pads' has ", len(p), " values, expected ", 2 * n;
assert all([v > 0 for v in k ++ s ++ d]), "kernel, strides and dilations must be positive";
assert all([v >= 0 for v in p]), "pads must not be negative, got ", p;
let ap = attr.auto_pad;
assert ap in {"NOTSET", "", "SAME_UPPER", "SAME_LOWER", "VALID"},
       "attribute 'auto_pad' has unknown value '", ap, "'";
let same = ap in {"SAME_UPPER", "SAME_LOWER"};
assert x[1] == w[1] * g, "input X has ", x[1], " channels but W ", shape(W), " with group ", g,
       " expects ", w[1], " * ", g;
assert w[0] % g == 0, "W has ", w[0], " output channels, not divisible by group ", g;
assert not has(B) or rank(B) == 1, "input B must be 1-D, got ", shape(B);
let m = if has(B) then merge(w[0], dim(B, 0)) else w[0];
# Per spatial axis: the padded input minus the dilated window (VALID pads nothing).
let room = [x[i + 2] + (if ap == "VALID" then 0 else p[i] + p[i + n]) - ((k[i] - 1) * d[i] + 1)
            for i in range(n)];
assert same or all([v >= 0 for v in room]), "the window does not fit the padded input";
output[0] = [x[0], m] ++ (if same then [cdiv(x[i + 2], s[i]) for i in range(n)]
                          else [room[i] // s[i] + 1 for i in range(n)]);
)rule";

inline constexpr char kConcatRule[] = R"rule(
let axis = if opset() > 0 and opset() < 4 then attr("axis", 1) else attr.axis;
let ss = shapes(inputs);
let ranked = [s for s in ss if known(s)];
let r = if len(ranked) == 0 then unknown else len(ranked[0]);
assert all([len(s) == r for s in ranked]), "inputs differ in rank: ", ss;
let ax = normalize_axis(axis, r);
output[0] = [if i == ax then sum([s[i] for s in ss]) else merge([s[i] for s in ranked])
             for i in range(r)];
# Contents of 1-D shape tensors (Shape -> ... -> Concat -> Reshape).
output[0].value = if r == 1 then flatten([
    value(inputs[k]) | (if dim(inputs[k], 0) <= 64 then [unknown for i in range(dim(inputs[k], 0))]
                        else unknown)
    for k in range(count(inputs))]) else unknown;
)rule";

inline constexpr char kReshapeRule[] = R"rule(
let x = shape(data);
let az = attr.allowzero != 0;
let t = if has(shape) then
          value(shape) | (if rank(shape) == 1 and dim(shape, 0) <= 64
                          then [unknown for i in range(dim(shape, 0))] else unknown)
        else if has_attr("shape") then attr.shape
        else fail("the target shape is missing (input 'shape')");
let neg = [i for i in range(len(t)) if t[i] == -1];
assert len(neg) <= 1, "shape ", t, " has more than one -1";
assert all([e >= -1 for e in t]), "shape ", t, " has an entry below -1";
assert not (az and len(neg) > 0 and any([e == 0 for e in t])),
       "shape contains both 0 and -1 while allowzero is set";
assert all([not (t[i] == 0 and not az) or i < len(x) for i in range(len(t))]),
       "a 0 in shape ", t, " copies a dim the input ", x, " does not have";
let o = [if t[i] == 0 and not az then x[i] else t[i] for i in range(len(t))];
let rest = prod([o[i] for i in range(len(o)) if t[i] != -1]);
let total = prod(x);
assert len(neg) != 1 or rest == 0 or total % rest == 0,
       "cannot infer the -1 entry: the input ", x, " has ", total,
       " elements, which the other entries' product ", rest, " does not divide";
assert len(neg) != 0 or total == prod(o), "cannot reshape ", x, " to ", o,
       ": element counts differ";
# A symbolic `rest` is a size the op divides by: not zero. (`rest == 0` alone would be unknown.)
output[0] = [if t[i] == -1 then (if known(rest) and rest == 0 then unknown else total // rest)
             else o[i]
             for i in range(len(t))];
output[0].value = value(data);
)rule";

inline constexpr char kGemmRule[] = R"rule(
let a = shape(A) | [unknown, unknown];
let b = shape(B) | [unknown, unknown];
assert len(a) == 2, "input A must be 2-D, got ", a;
assert len(b) == 2, "input B must be 2-D, got ", b;
let ta = attr.transA != 0;
let tb = attr.transB != 0;
let m = if ta then a[1] else a[0];
let ka = if ta then a[0] else a[1];
let kb = if tb then b[1] else b[0];
let n = if tb then b[0] else b[1];
assert ka == kb, "inner dimensions differ: A ", a, " has K=", ka, " but B ", b, " has K=", kb;
let o = [m, n];
let c = if has(C) then shape(C) else [];
assert len(c) <= 2, "input C: shape ", c, " cannot be broadcast to ", o, ": it has more dims";
assert all([c[i] == 1 or c[i] == o[i + 2 - len(c)] for i in range(len(c))]),
       "input C: shape ", c, " cannot be broadcast to ", o;
output[0] = o;
)rule";

inline constexpr char kSoftmaxRule[] = R"rule(
let r = rank(input);
let legacy = opset() > 0 and opset() < 13;
# Before opset 13 'axis' defaults to 1 (the descriptor's default is the newer -1).
let axis = if legacy and not has_attr("axis") then 1 else attr.axis;
let last = if opset() > 0 and opset() < 11 then r else r - 1;
assert axis >= -r and axis <= last, "'axis' value ", axis, " is out of range for rank ", r;
output[0] = shape(input);
)rule";

inline constexpr char kAddRule[] = R"rule(
output[0] = broadcast(shape(A), shape(B));
let va = value(A);
let vb = value(B);
output[0].value =
    if rank(A) > 1 or rank(B) > 1 or len(va) == 0 or len(vb) == 0 then unknown
    else if len(va) == len(vb) then [va[i] + vb[i] for i in range(len(va))]
    else if len(va) == 1 then [va[0] + y for y in vb]
    else if len(vb) == 1 then [x + vb[0] for x in va]
    else unknown;
)rule";

}  // namespace example_rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_EXAMPLE_RULES_H_
