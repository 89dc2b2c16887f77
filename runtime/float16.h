#ifndef GRAPHOPT_RUNTIME_FLOAT16_H_
#define GRAPHOPT_RUNTIME_FLOAT16_H_

#include <cstdint>
#include <cstring>

namespace graphopt::runtime {

// IEEE 754 binary16, stored as its bits. Arithmetic goes through float.
struct Float16 {
  uint16_t bits = 0;

  Float16() = default;
  explicit Float16(float f) : bits(FromFloat(f)) {}
  explicit operator float() const { return ToFloat(bits); }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
      if (mant == 0) {
        bits = sign;
      } else {  // subnormal: renormalise
        int e = -1;
        do {
          ++e;
          mant <<= 1;
        } while ((mant & 0x400) == 0);
        bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
      }
    } else if (exp == 0x1f) {
      bits = sign | 0x7f800000u | (mant << 13);
    } else {
      bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  // Round to nearest even, with overflow to infinity and NaN kept quiet.
  static uint16_t FromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000u) {  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // overflow
    if (abs < 0x38800000u) {  // subnormal or zero in half
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
      const uint32_t e = abs >> 23;
      uint32_t mant = (abs & 0x7fffff) | 0x800000;
      const int shift = 126 - static_cast<int>(e);  // 14 + (113 - e) - 1 ... see below
      // value = mant * 2^(e-150); half subnormal unit = 2^-24 -> mant >> (126 - e)
      const uint32_t rounded = mant >> shift;
      const uint32_t rem = mant & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      uint32_t r = rounded;
      if (rem > half || (rem == half && (rounded & 1))) ++r;
      return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
    const uint32_t rem = r & 0x1fff;
    r >>= 13;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
};

// bfloat16: the upper half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(FromFloat(f)) {}
  explicit operator float() const { return ToFloat(bits); }

  static float ToFloat(uint16_t b) {
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  static uint16_t FromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
    const uint32_t lsb = (x >> 16) & 1;
    x += 0x7fff + lsb;
    return static_cast<uint16_t>(x >> 16);
  }
};

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_FLOAT16_H_
