//! `setters!`: the builder-style `with_*` setters of `#[non_exhaustive]` option structs, which
//! callers outside the defining crate cannot build with a struct literal.

/// Writes `pub fn with_x(mut self, value) -> Self` setters, documented "Sets `x`.":
/// `with_x(x: T)` sets `value`, `with_x(x: into T)` takes `impl Into<T>`, and
/// `with_x(x: some T)` / `with_x(x: some into T)` wrap the value in `Some`.
#[macro_export]
#[doc(hidden)]
macro_rules! setters {
    (impl $ty:ty { $($with:ident($field:ident: $($spec:tt)+)),* $(,)? }) => {
        /// Builder-style setters (the struct is `#[non_exhaustive]`: build it from its
        /// constructor or `Default`, then set what differs).
        impl $ty {
            $($crate::setters!(@one $with $field $($spec)+);)*
        }
    };
    (@one $with:ident $field:ident some into $t:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $with(mut self, value: impl Into<$t>) -> Self {
            self.$field = Some(value.into());
            self
        }
    };
    (@one $with:ident $field:ident some $t:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $with(mut self, value: $t) -> Self {
            self.$field = Some(value);
            self
        }
    };
    (@one $with:ident $field:ident into $t:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $with(mut self, value: impl Into<$t>) -> Self {
            self.$field = value.into();
            self
        }
    };
    (@one $with:ident $field:ident $t:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $with(mut self, value: $t) -> Self {
            self.$field = value;
            self
        }
    };
}
