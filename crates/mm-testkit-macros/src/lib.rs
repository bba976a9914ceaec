//! `#[mm_testkit::test]`: a test of a suite that runs on mm-testkit's harness (libtest-mimic, so
//! a test can find at run time that it cannot run here and say why: `mm_testkit::skip`).
//!
//! On a plain `fn` or an `async fn` (then on a tokio runtime, current-thread unless
//! `flavor = "multi_thread"`, with `worker_threads = N`, as `#[tokio::test]` takes them). The
//! function stays as written (an `async fn` becomes a plain one that blocks on its body), and
//! an entry naming it goes to the harness's list; `#[ignore = "why"]` marks it ignored unless
//! asked for (`--ignored`, `--include-ignored`), reported with its reason (a bare `#[ignore]` is
//! refused: an ignored test says why).
//!
//! A suite on this harness has `harness = false`: a plain `#[test]` or `#[tokio::test]` there
//! would never run, and the suite's own `every_test_of_the_suite_is_on_its_harness` fails on one.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{Expr, ItemFn, Lit, Meta, MetaNameValue, Token, parse_macro_input};

/// See the crate's documentation.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let args =
        parse_macro_input!(args with Punctuated::<MetaNameValue, Token![,]>::parse_terminated);
    let function = parse_macro_input!(item as ItemFn);
    expand(args, function)
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}

fn expand(args: Punctuated<MetaNameValue, Token![,]>, mut function: ItemFn) -> syn::Result<Tokens> {
    let mut multi_thread = false;
    let mut worker_threads: Option<syn::LitInt> = None;
    for arg in &args {
        let value = match &arg.value {
            Expr::Lit(lit) => &lit.lit,
            other => return Err(syn::Error::new_spanned(other, "expected a literal")),
        };
        match (
            arg.path.get_ident().map(|i| i.to_string()).as_deref(),
            value,
        ) {
            (Some("flavor"), Lit::Str(s)) if s.value() == "multi_thread" => multi_thread = true,
            (Some("flavor"), Lit::Str(s)) if s.value() == "current_thread" => multi_thread = false,
            (Some("worker_threads"), Lit::Int(n)) => worker_threads = Some(n.clone()),
            _ => {
                return Err(syn::Error::new_spanned(
                    arg,
                    "expected `flavor = \"multi_thread\"|\"current_thread\"` or `worker_threads = N`",
                ));
            }
        }
    }
    if worker_threads.is_some() && !multi_thread {
        return Err(syn::Error::new_spanned(
            &args,
            "`worker_threads` needs `flavor = \"multi_thread\"`",
        ));
    }

    // `#[ignore]` / `#[ignore = "why"]` are the harness's, not the compiler's.
    let mut ignored = quote!(::core::option::Option::None);
    let mut attrs = Vec::new();
    for attr in function.attrs.drain(..) {
        if attr.path().is_ident("ignore") {
            // The reason is what the harness reports for it: one is required.
            match &attr.meta {
                Meta::NameValue(nv) => {
                    let why = &nv.value;
                    ignored = quote!(::core::option::Option::Some(#why));
                }
                Meta::Path(_) | Meta::List(_) => {
                    return Err(syn::Error::new_spanned(
                        &attr,
                        "expected `#[ignore = \"why\"]`: an ignored test says why",
                    ));
                }
            }
        } else {
            attrs.push(attr);
        }
    }
    function.attrs = attrs;

    if !function.sig.inputs.is_empty()
        || !function.sig.generics.params.is_empty()
        || !matches!(function.sig.output, syn::ReturnType::Default)
    {
        return Err(syn::Error::new_spanned(
            &function.sig,
            "a test takes no arguments and returns nothing (it panics when it fails)",
        ));
    }
    if function.sig.asyncness.take().is_some() {
        let body = &function.block;
        let builder = if multi_thread {
            let threads = worker_threads.map(|n| quote!(.worker_threads(#n)));
            quote!(::mm_testkit::harness::tokio::runtime::Builder::new_multi_thread() #threads)
        } else {
            quote!(::mm_testkit::harness::tokio::runtime::Builder::new_current_thread())
        };
        let block: syn::Block = syn::parse2(quote!({
            let body = async move #body;
            #[allow(clippy::expect_used)]
            #builder
                .enable_all()
                .build()
                .expect("the test's tokio runtime")
                .block_on(body)
        }))?;
        *function.block = block;
    } else if multi_thread {
        return Err(syn::Error::new_spanned(
            &function.sig,
            "`flavor` is for an `async fn`",
        ));
    }

    let name = &function.sig.ident;
    let name_text = name.to_string();
    Ok(quote! {
        #function

        ::mm_testkit::harness::inventory::submit! {
            ::mm_testkit::harness::Test {
                module: ::core::module_path!(),
                name: #name_text,
                ignored: #ignored,
                run: #name,
            }
        }
    })
}
